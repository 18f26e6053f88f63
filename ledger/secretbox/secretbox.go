// Package secretbox seals the secrets the service must read back (webhook
// and processor signing secrets) before they are stored, so that a
// database dump alone reveals none of them. It uses AES-256-GCM from the
// standard library with keys from the environment (SECRETS_KEY): the first
// key seals, every key opens, so a new key can be put first while values
// sealed with the old ones are still read, then re-sealed
// (`partnerctl secrets rotate`).
//
// A sealed value is text: "enc:v1:<key id>:<base64 of nonce and
// ciphertext>". The purpose (which column the value lives in) is bound as
// additional data, so a value copied into another column does not open.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every sealed value; a stored value without it is
// plaintext left from before sealing.
const Prefix = "enc:"

// version is the format of the sealed values this package writes.
const version = "v1"

// KeySize is the size of a key: AES-256.
const KeySize = 32

// DevKeyID names the development key. Its bytes are public (they are in
// this file): it only lets `make run` and the tests work without
// SECRETS_KEY. Every Keyring opens values sealed with it, so a deployment
// that started without SECRETS_KEY re-seals them with its own key by
// `partnerctl secrets rotate`.
const DevKeyID = "dev"

// devKey is the development key: SHA-256 of a public phrase.
var devKey = func() []byte {
	sum := sha256.Sum256([]byte("partnertrack public development key, never use in production"))
	return sum[:]
}()

// ErrOpen is returned when a sealed value cannot be opened: its key is not
// in the keyring, or it was altered.
var ErrOpen = errors.New("secretbox: cannot open the sealed value (unknown key or altered value)")

// Keyring holds the keys: the first seals, all open.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
	dev     bool // built from the development key alone
}

// Dev returns the keyring of the public development key.
func Dev() *Keyring {
	k, err := newKeyring([]namedKey{{DevKeyID, devKey}})
	if err != nil {
		panic(err)
	}
	k.dev = true
	return k
}

// IsDev reports whether the keyring seals with the public development key.
func (k *Keyring) IsDev() bool { return k.dev }

// PrimaryID is the id of the key that seals.
func (k *Keyring) PrimaryID() string { return k.primary }

type namedKey struct {
	id  string
	key []byte
}

// Parse reads SECRETS_KEY: comma-separated "id:base64key" pairs, each key
// 32 bytes in standard base64, ids of letters, digits, '-' and '_' (at
// most 32), unique. The first key seals. The error never repeats key
// material.
func Parse(s string) (*Keyring, error) {
	var keys []namedKey
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		id, b64, ok := strings.Cut(part, ":")
		if !ok || !validID(id) {
			return nil, fmt.Errorf("key %d: want id:base64key with an id of letters, digits, - or _ (at most 32)", i+1)
		}
		key, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(key) != KeySize {
			return nil, fmt.Errorf("key %d (%s): want %d bytes in standard base64 (partnerctl secrets new-key prints one)", i+1, id, KeySize)
		}
		for _, k := range keys {
			if k.id == id {
				return nil, fmt.Errorf("key %d: id %s appears twice", i+1, id)
			}
		}
		keys = append(keys, namedKey{id, key})
	}
	return newKeyring(keys)
}

func newKeyring(keys []namedKey) (*Keyring, error) {
	k := &Keyring{primary: keys[0].id, aeads: make(map[string]cipher.AEAD, len(keys)+1)}
	if _, ok := findKey(keys, DevKeyID); !ok {
		keys = append(keys, namedKey{DevKeyID, devKey})
	}
	for _, nk := range keys {
		block, err := aes.NewCipher(nk.key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.aeads[nk.id] = aead
	}
	return k, nil
}

func findKey(keys []namedKey, id string) (namedKey, bool) {
	for _, k := range keys {
		if k.id == id {
			return k, true
		}
	}
	return namedKey{}, false
}

func validID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// NewKey returns a fresh random key in SECRETS_KEY's form, named id.
func NewKey(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("key id %q: letters, digits, - or _ (at most 32)", id)
	}
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return id + ":" + base64.StdEncoding.EncodeToString(b), nil
}

// Seal encrypts plaintext for the column named by purpose with the
// primary key.
func (k *Keyring) Seal(purpose, plaintext string) (string, error) {
	aead := k.aeads[k.primary]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secretbox: %w", err)
	}
	out := aead.Seal(nonce, nonce, []byte(plaintext), additional(purpose, k.primary))
	return Prefix + version + ":" + k.primary + ":" + base64.StdEncoding.EncodeToString(out), nil
}

// Open decrypts a value Seal returned for the same purpose. A value
// without the "enc:" prefix is plaintext stored before sealing and is
// returned as it is (the migration's constraint keeps new writes sealed).
func (k *Keyring) Open(purpose, stored string) (string, error) {
	if !IsSealed(stored) {
		return stored, nil
	}
	id, aead, data, err := k.parse(stored)
	if err != nil {
		return "", err
	}
	ns := aead.NonceSize()
	if len(data) < ns+aead.Overhead() {
		return "", ErrOpen
	}
	plain, err := aead.Open(nil, data[:ns], data[ns:], additional(purpose, id))
	if err != nil {
		return "", ErrOpen
	}
	return string(plain), nil
}

// IsSealed reports whether a stored value is sealed.
func IsSealed(stored string) bool { return strings.HasPrefix(stored, Prefix) }

// Current reports whether a stored value is sealed with the primary key
// (rotation leaves it alone).
func (k *Keyring) Current(stored string) bool {
	return strings.HasPrefix(stored, Prefix+version+":"+k.primary+":")
}

func (k *Keyring) parse(stored string) (string, cipher.AEAD, []byte, error) {
	rest, ok := strings.CutPrefix(stored, Prefix+version+":")
	if !ok {
		return "", nil, nil, fmt.Errorf("secretbox: unknown sealed format %.8q", stored)
	}
	id, b64, ok := strings.Cut(rest, ":")
	if !ok {
		return "", nil, nil, ErrOpen
	}
	aead, ok := k.aeads[id]
	if !ok {
		return "", nil, nil, fmt.Errorf("%w: key %s is not in SECRETS_KEY", ErrOpen, id)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", nil, nil, ErrOpen
	}
	return id, aead, data, nil
}

// additional binds a sealed value to its column and key id.
func additional(purpose, keyID string) []byte {
	return []byte("partnertrack/" + version + "/" + purpose + "/" + keyID)
}
