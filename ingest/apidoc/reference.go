package apidoc

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"html/template"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed reference.html
var referenceSource string

// operation is one method of one path, as the reference page lists it.
type operation struct {
	ID, Method, Path, Summary, Description string
	Security                               []string
	Params                                 []*openapi3.Parameter
	Body                                   string // the request schema, as JSON
	Responses                              []response
}

type response struct {
	Status, Description, ContentType, Schema, Example string
}

type tagSection struct {
	Name, Description string
	Operations        []operation
}

var reference = sync.OnceValues(func() ([]byte, error) {
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("reference").Funcs(template.FuncMap{"lower": strings.ToLower}).Parse(referenceSource)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, map[string]any{
		"Title":       doc.Info.Title,
		"Description": doc.Info.Description,
		"Sections":    sections(doc),
		"Schemas":     schemaNames(doc),
	})
	return buf.Bytes(), err
})

// Reference returns the API reference page: every operation by tag, with
// its parameters, request schema and answers, rendered on the server so
// the page needs no script.
func Reference() ([]byte, error) { return reference() }

func sections(doc *openapi3.T) []tagSection {
	byTag := map[string][]operation{}
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Find(path)
		for method, op := range item.Operations() {
			tag := "other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			byTag[tag] = append(byTag[tag], describe(doc, method, path, item, op))
		}
	}
	var out []tagSection
	for _, t := range doc.Tags {
		if ops := byTag[t.Name]; len(ops) > 0 {
			out = append(out, tagSection{Name: t.Name, Description: t.Description, Operations: sorted(ops)})
			delete(byTag, t.Name)
		}
	}
	for name, ops := range byTag {
		out = append(out, tagSection{Name: name, Operations: sorted(ops)})
	}
	return out
}

func sorted(ops []operation) []operation {
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return methodRank[ops[i].Method] < methodRank[ops[j].Method]
	})
	return ops
}

// methodRank orders a path's operations: reads, writes, then preflights.
var methodRank = map[string]int{"GET": 0, "POST": 1, "PUT": 2, "PATCH": 3, "DELETE": 4, "OPTIONS": 5}

func describe(doc *openapi3.T, method, path string, item *openapi3.PathItem, op *openapi3.Operation) operation {
	o := operation{ID: op.OperationID, Method: method, Path: path, Summary: op.Summary, Description: op.Description}
	security := doc.Security
	if op.Security != nil {
		security = *op.Security
	}
	for _, req := range security {
		for name, scopes := range req {
			if len(scopes) > 0 {
				name += " (" + strings.Join(scopes, ", ") + ")"
			}
			o.Security = append(o.Security, name)
		}
	}
	for _, p := range append(item.Parameters, op.Parameters...) {
		if p.Value != nil {
			o.Params = append(o.Params, p.Value)
		}
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		for _, mt := range op.RequestBody.Value.Content {
			if mt.Schema != nil {
				o.Body = indent(mt.Schema)
			}
		}
	}
	if op.Responses != nil {
		codes := make([]string, 0, op.Responses.Len())
		for code := range op.Responses.Map() {
			codes = append(codes, code)
		}
		sort.Strings(codes)
		for _, code := range codes {
			ref := op.Responses.Value(code)
			if ref == nil || ref.Value == nil {
				continue
			}
			r := response{Status: code}
			if ref.Value.Description != nil {
				r.Description = *ref.Value.Description
			}
			for ct, mt := range ref.Value.Content {
				r.ContentType = ct
				if mt.Schema != nil {
					r.Schema = schemaName(mt.Schema)
				}
				switch {
				case mt.Example != nil:
					r.Example = indent(mt.Example)
				case len(mt.Examples) > 0:
					var names []string
					for n := range mt.Examples {
						names = append(names, n)
					}
					sort.Strings(names)
					var parts []string
					for _, n := range names {
						if ex := mt.Examples[n]; ex != nil && ex.Value != nil {
							parts = append(parts, indent(ex.Value.Value))
						}
					}
					r.Example = strings.Join(parts, "\n")
				}
			}
			o.Responses = append(o.Responses, r)
		}
	}
	return o
}

// schemaName names a referenced schema, else shows the inline one.
func schemaName(s *openapi3.SchemaRef) string {
	if s.Ref != "" {
		return s.Ref[strings.LastIndex(s.Ref, "/")+1:]
	}
	return indent(s)
}

func schemaNames(doc *openapi3.T) []map[string]string {
	var names []string
	for n := range doc.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]map[string]string, 0, len(names))
	for _, n := range names {
		s := doc.Components.Schemas[n]
		desc := ""
		if s.Value != nil {
			desc = s.Value.Description
		}
		out = append(out, map[string]string{"Name": n, "Description": desc, "Schema": indent(s)})
	}
	return out
}

func indent(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}
