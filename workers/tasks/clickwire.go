package tasks

import (
	"strconv"
	"unicode/utf8"

	"github.com/partnertrack/partnertrack/ledger"
)

// appendClickWire appends a click's wire form (clickWire's JSON, with its
// keys in the same order and omitempty alike) to b. The edge encodes every
// click it takes, and encoding/json's reflection cost more than the rest
// of the encoding together; the worker still decodes with encoding/json,
// and TestClickWireMatchesMarshal holds the two to the same meaning.
func appendClickWire(b []byte, c *ledger.Click) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, c.ID)
	b = append(b, `,"pg":`...)
	b = strconv.AppendInt(b, c.ProgramID, 10)
	if c.PartnerID != nil {
		b = append(b, `,"pa":`...)
		b = strconv.AppendInt(b, *c.PartnerID, 10)
	}
	if c.LinkID != nil {
		b = append(b, `,"ln":`...)
		b = strconv.AppendInt(b, *c.LinkID, 10)
	}
	if c.IsTest {
		b = append(b, `,"t":true`...)
	}
	b = appendOptString(b, `,"s":`, c.SessionID)
	b = appendOptString(b, `,"u":`, c.PageURL)
	b = appendOptString(b, `,"r":`, c.ReferrerURL)
	b = appendOptString(b, `,"gc":`, c.GeoCountry)
	b = appendOptString(b, `,"gr":`, c.GeoRegion)
	b = appendOptString(b, `,"gy":`, c.GeoCity)
	b = appendOptString(b, `,"dt":`, c.DeviceType)
	b = appendOptString(b, `,"os":`, c.DeviceOS)
	b = appendOptString(b, `,"b":`, c.BrowserName)
	b = appendOptString(b, `,"ip":`, c.IP)
	b = appendOptString(b, `,"ua":`, c.UserAgent)
	return append(b, '}')
}

// appendOptString appends a member (key: comma, quoted name, colon) whose
// empty value is left out, as omitempty does.
func appendOptString(b []byte, key, val string) []byte {
	if val == "" {
		return b
	}
	return appendJSONString(append(b, key...), val)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string that decodes to what
// encoding/json's encoding of s decodes to: quotes, backslashes and
// control characters escaped, each byte of invalid UTF-8 as U+FFFD, and
// U+2028, U+2029 and <, >, & escaped as encoding/json escapes them (so the
// bytes match its output too).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default: // other control characters, and <, >, &
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
