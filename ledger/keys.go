package ledger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"time"
)

// KeyMode tells a program's live key from its test key. Every call made
// with a test key is a test call.
type KeyMode string

// Key modes.
const (
	LiveKey KeyMode = "live"
	TestKey KeyMode = "test"
)

// Secret prefixes. Program keys start with aff_ (test keys with aff_test_),
// agent keys with agt_; sign-in tokens carry their own prefixes so that
// secret scanners and people can tell them apart.
const (
	ProgramKeyPrefix     = "aff_"
	TestProgramKeyPrefix = "aff_test_"
	AgentKeyPrefix       = "agt_"
	DashboardTokenPrefix = "pt_sess_"
	CLITokenPrefix       = "pt_cli_"
)

// secretBytes is the randomness of every key and token: 160 bits.
const secretBytes = 20

var secretEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewSecret returns prefix followed by 160 random bits in lower-case base32.
func NewSecret(prefix string) string {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		panic("ledger: crypto/rand failed: " + err.Error())
	}
	return prefix + secretEncoding.EncodeToString(b)
}

// HashSecret returns the SHA-256 of a whole key or token, the only form in
// which keys and tokens are stored. Keys carry 160 random bits, so a plain
// hash is enough; authentication is an exact match on the whole key.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// MaskSecret returns the displayable form of a key: its prefix, asterisks
// and its last four characters (aff_****k2jq).
func MaskSecret(prefix, secret string) string {
	tail := secret
	if len(tail) > 4 {
		tail = tail[len(tail)-4:]
	}
	return prefix + "****" + tail
}

// NewProgramKey returns a fresh key of the given mode with its hash and
// masked form.
func NewProgramKey(mode KeyMode) (plain string, hash []byte, masked string) {
	prefix := ProgramKeyPrefix
	if mode == TestKey {
		prefix = TestProgramKeyPrefix
	}
	plain = NewSecret(prefix)
	return plain, HashSecret(plain), MaskSecret(prefix, plain)
}

// ProgramKey is what an authenticated program key says about the caller.
type ProgramKey struct {
	ProgramID int64
	Mode      KeyMode
	MarkedAt  *time.Time // set while the key is marked for rotation
	Deadline  *time.Time // after it, the key is retired
}

// Marked reports whether the key is marked for rotation.
func (k *ProgramKey) Marked() bool { return k.MarkedAt != nil && k.Deadline != nil }

// Retired reports whether the rotation deadline has been reached.
func (k *ProgramKey) Retired(now time.Time) bool {
	return k.Marked() && !now.Before(*k.Deadline)
}

// IsTest reports whether calls made with the key are test calls.
func (k *ProgramKey) IsTest() bool { return k.Mode == TestKey }

// KeyRotation is the rotation mark of a program's live key.
type KeyRotation struct {
	MarkedAt time.Time
	Deadline time.Time
}

// GeneratedKey is the result of the owner's generate/regenerate action: the
// only time the full key is shown.
type GeneratedKey struct {
	APIKey         string
	APITokenMasked string
	Mode           KeyMode
}

// KeyService authenticates and manages program keys.
type KeyService interface {
	// AuthenticateProgramKey returns the key whose whole value is token.
	// Errors: ENotFound when no program has it.
	AuthenticateProgramKey(ctx context.Context, token string) (*ProgramKey, error)
	// RegenerateProgramKey replaces the program's key of that mode in place;
	// the old key stops working when it returns. Warnings stop.
	// Errors: ENotFound.
	RegenerateProgramKey(ctx context.Context, programID int64, mode KeyMode) (*GeneratedKey, error)
	// MarkKeyRotation marks the live key for rotation with a deadline.
	// Errors: ENotFound.
	MarkKeyRotation(ctx context.Context, programID int64, deadline time.Time) (*KeyRotation, error)
}
