package ledger

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
	"time"
)

// A CLI login is bound to the terminal that started it (issue 21): the
// start shows a short user code in the terminal and on the sign-in page,
// where the person confirms it before the page offers sign-in; and a
// client may send an S256 code challenge at start, after which only a poll
// with the matching code verifier gets the token (RFC 7636's check, on the
// poll). A client that sends only state (the reference CLI) keeps working;
// docs/decisions.md says what risk remains for it.

// userCodeAlphabet is RFC 8628's base-20 alphabet: consonants only, no
// vowels (no words) and no look-alike characters.
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// userCodeLen is the number of characters of a user code (shown XXXX-XXXX).
const userCodeLen = 8

// Messages of the terminal binding.
const (
	MsgCLIUserCodeMismatch   = "The code does not match this login: sign in only from a login you started yourself"
	MsgCLIConfirmFields      = "Missing required fields: state, user_code"
	MsgCLICodeChallenge      = "code_challenge must be the base64url SHA-256 of a code verifier (43 characters)"
	MsgCLIChallengeMethod    = "code_challenge_method must be S256"
	MsgCLIVerifierMismatch   = "code_verifier does not match this login"
	CodeChallengeMethodS256  = "S256"
	maxCLIUserAgentLen       = 200
	codeChallengeEncodedSize = 43
)

// NewUserCode returns a fresh user code of userCodeLen characters of
// userCodeAlphabet, stored and compared without the dash.
func NewUserCode() string {
	b := make([]byte, userCodeLen)
	out := make([]byte, userCodeLen)
	for i := 0; i < userCodeLen; {
		if _, err := rand.Read(b); err != nil {
			panic("ledger: crypto/rand failed: " + err.Error())
		}
		for _, x := range b {
			// 240 is the largest multiple of 20 below 256: no bias.
			if x < 240 && i < userCodeLen {
				out[i] = userCodeAlphabet[int(x)%len(userCodeAlphabet)]
				i++
			}
		}
	}
	return string(out)
}

// FormatUserCode shows a stored user code as XXXX-XXXX.
func FormatUserCode(code string) string {
	if len(code) != userCodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// NormalizeUserCode reads a user code as a person may type it: any case,
// with or without the dash and spaces.
func NormalizeUserCode(s string) string {
	s = strings.ToUpper(s)
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, s)
}

// CLIUserAgent trims a starting client's User-Agent for storage and display.
func CLIUserAgent(ua string) string {
	ua = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(ua))
	if len(ua) > maxCLIUserAgentLen {
		ua = strings.ToValidUTF8(ua[:maxCLIUserAgentLen], "")
	}
	return ua
}

// ValidCodeChallenge reports whether s can be an S256 code challenge: the
// unpadded base64url encoding of 32 bytes.
func ValidCodeChallenge(s string) bool {
	if len(s) != codeChallengeEncodedSize {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

// CodeChallengeS256 is the S256 challenge of a code verifier.
func CodeChallengeS256(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// CheckVerifier tells whether a poll may read login l: a login started
// with a code challenge needs the verifier whose S256 is that challenge.
// Errors: EForbidden (MsgCLIVerifierMismatch).
func (l *CLILogin) CheckVerifier(verifier string) error {
	if l == nil || l.CodeChallenge == "" {
		return nil
	}
	if subtle.ConstantTimeCompare([]byte(CodeChallengeS256(verifier)), []byte(l.CodeChallenge)) != 1 {
		return NewError(EForbidden, MsgCLIVerifierMismatch)
	}
	return nil
}

// CheckConfirm tells whether the person may confirm login l with the code
// they were shown. Errors: those of CheckCallback before confirmation,
// EInvalid (MsgCLIUserCodeMismatch).
func (l *CLILogin) CheckConfirm(userCode string, now time.Time) error {
	if err := l.checkPending(now); err != nil {
		return err
	}
	if l.UserCode == "" || subtle.ConstantTimeCompare([]byte(NormalizeUserCode(userCode)), []byte(l.UserCode)) != 1 {
		return NewError(EInvalid, MsgCLIUserCodeMismatch)
	}
	return nil
}

// CLILoginOptions is what a starting client tells about itself.
type CLILoginOptions struct {
	UserAgent     string // shown on the sign-in page
	CodeChallenge string // S256 challenge; "" when the client sent none
}
