package cli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Credentials are a stored login: the CLI login token of one API, kept in
// <config dir>/partnertrack/credentials.json, readable by the user only.
type Credentials struct {
	APIURL       string    `json:"api_url"`
	Token        string    `json:"token"`
	Email        string    `json:"email"`
	UserID       int64     `json:"user_id"`
	AdvertiserID *int64    `json:"advertiser_id"`
	ExpiresAt    time.Time `json:"expires_at"`
	CreatedAt    time.Time `json:"created_at"`
}

// credentialsPath is where the credentials live.
func (a *app) credentialsPath() (string, error) {
	dir := strings.TrimSpace(a.env.Getenv(EnvConfigDir))
	if dir == "" {
		base, err := a.env.ConfigDir()
		if err != nil {
			return "", &exitError{code: ExitFailure, msg: "cannot find your configuration directory: " + err.Error()}
		}
		dir = filepath.Join(base, "partnertrack")
	}
	return filepath.Join(dir, "credentials.json"), nil
}

// readCredentials returns the stored login, nil when there is none.
func (a *app) readCredentials() (*Credentials, error) {
	path, err := a.credentialsPath()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, &exitError{code: ExitFailure, msg: "cannot read " + path + ": " + err.Error()}
	}
	var c Credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, &exitError{code: ExitFailure, msg: path + " is not valid JSON; run partnertrack logout, then log in again"}
	}
	return &c, nil
}

// writeCredentials stores a login: the directory 0700, the file 0600,
// written whole (a temporary file renamed over the old one).
func (a *app) writeCredentials(c *Credentials) (string, error) {
	path, err := a.credentialsPath()
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		return "", &exitError{code: ExitFailure, msg: "cannot save the login to " + path + ": " + err.Error()}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fail(err)
	}
	raw, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fail(err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".credentials-*.json")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fail(err)
	}
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return path, nil
}

// loginToken returns the login token for the current API: PARTNERTRACK_TOKEN,
// else the stored login when it is for this API and unexpired. A login
// for another API is never sent to this one.
func (a *app) loginToken() (string, error) {
	if t := strings.TrimSpace(a.env.Getenv(EnvToken)); t != "" {
		return t, nil
	}
	c, err := a.readCredentials()
	if err != nil {
		return "", err
	}
	switch {
	case c == nil || c.Token == "":
		return "", userError("not logged in: run partnertrack login")
	case c.APIURL != a.apiURL:
		return "", userError("logged in to %s, not %s: run partnertrack login --api-url %s", c.APIURL, a.apiURL, a.apiURL)
	case !c.ExpiresAt.IsZero() && !a.env.Now().Before(c.ExpiresAt):
		return "", userError("your login expired: run partnertrack login")
	}
	return c.Token, nil
}
