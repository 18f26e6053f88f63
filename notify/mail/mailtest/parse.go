package mailtest

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"strings"
)

// Parsed is a received message's headers and its text and HTML parts,
// decoded (line endings as \n).
type Parsed struct {
	Subject, To, MessageID string
	Text, HTML             string
}

// Parse reads a multipart/alternative message of a text and an HTML part.
func (m Message) Parse() (Parsed, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return Parsed{}, fmt.Errorf("parse message: %v", err)
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		return Parsed{}, fmt.Errorf("subject: %v", err)
	}
	p := Parsed{Subject: subject, To: msg.Header.Get("To"), MessageID: msg.Header.Get("Message-Id")}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/alternative" {
		return Parsed{}, fmt.Errorf("content type %q (%v), want multipart/alternative", mediaType, err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart() // decodes quoted-printable
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return Parsed{}, err
		}
		body, err := io.ReadAll(part)
		if err != nil {
			return Parsed{}, err
		}
		text := strings.ReplaceAll(string(body), "\r\n", "\n")
		switch ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type")); ct {
		case "text/plain":
			p.Text = text
		case "text/html":
			p.HTML = text
		default:
			return Parsed{}, fmt.Errorf("unexpected part %q", ct)
		}
	}
}
