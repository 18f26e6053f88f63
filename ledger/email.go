package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"time"
)

// Emails. The ledger decides which email to send to whom and writes it to
// the outbox in the transaction of the change that causes it (an invite,
// an application); the emails worker renders the kind's templates
// (package notify/mail) and sends it after commit. The payload carries the
// template's data, never a rendered message.

// Where emails go in the outbox: the task type and the queue (before any
// namespace) that package workers/tasks routes.
const (
	OutboxTaskEmail   = "email:send"
	OutboxQueueEmails = "emails"
)

// Email kinds: each names a pair of templates in notify/mail/templates.
const (
	EmailPartnerInvite       = "partner_invite"
	EmailApplicationReceived = "application_received"
	EmailApplicationApproved = "application_approved"
	EmailApplicationRejected = "application_rejected"
	EmailCommissionDigest    = "commission_digest"
	// EmailPayoutPaid tells a partner a payout was paid (issue 26, helper B).
	EmailPayoutPaid = "payout_paid"
)

// Limits and messages of email data.
const (
	maxEmailAddressLen        = 254
	maxEmailFieldLen          = 5000
	msgEmailRecipient         = "email recipient must be one address of at most 254 characters"
	msgEmailURL               = "must be an absolute http or https URL"
	msgEmailFieldTooLong      = "must be at most 5000 characters"
	msgEmailFieldRequiredTail = "is required"
)

// EmailKinds lists the kinds the worker renders.
var EmailKinds = []string{EmailPartnerInvite, EmailApplicationReceived, EmailApplicationApproved, EmailApplicationRejected,
	EmailCommissionDigest, EmailPayoutPaid}

// EmailData is the data of one email kind.
type EmailData interface {
	// EmailKind names the kind's templates.
	EmailKind() string
	// Validate reports a missing or malformed field.
	Validate() error
}

// Email is the outbox payload of one email to one recipient.
type Email struct {
	To   string          `json:"to"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// PartnerInviteEmail invites a partner to a brand's program.
type PartnerInviteEmail struct {
	ProgramName  string    `json:"program_name"`
	BrandMessage string    `json:"brand_message,omitempty"` // the brand's own words, optional
	AcceptURL    string    `json:"accept_url"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// ApplicationReceivedEmail tells the brand a partner applied to its program.
type ApplicationReceivedEmail struct {
	ProgramName    string `json:"program_name"`
	ApplicantName  string `json:"applicant_name"`
	ApplicantEmail string `json:"applicant_email"`
	Message        string `json:"message,omitempty"` // the applicant's own words, optional
	ReviewURL      string `json:"review_url"`
}

// ApplicationApprovedEmail tells the applicant it joined the program.
type ApplicationApprovedEmail struct {
	ProgramName  string `json:"program_name"`
	PartnerName  string `json:"partner_name"`
	DashboardURL string `json:"dashboard_url"`
}

// ApplicationRejectedEmail tells the applicant the brand declined.
type ApplicationRejectedEmail struct {
	ProgramName string `json:"program_name"`
	PartnerName string `json:"partner_name"`
	Reason      string `json:"reason,omitempty"` // the brand's reason, optional
}

// EmailKind implements EmailData.
func (PartnerInviteEmail) EmailKind() string { return EmailPartnerInvite }

// EmailKind implements EmailData.
func (ApplicationReceivedEmail) EmailKind() string { return EmailApplicationReceived }

// EmailKind implements EmailData.
func (ApplicationApprovedEmail) EmailKind() string { return EmailApplicationApproved }

// EmailKind implements EmailData.
func (ApplicationRejectedEmail) EmailKind() string { return EmailApplicationRejected }

// Validate implements EmailData.
func (d PartnerInviteEmail) Validate() error {
	return errors.Join(required("program_name", d.ProgramName), optional("brand_message", d.BrandMessage),
		webURL("accept_url", d.AcceptURL), requiredTime("expires_at", d.ExpiresAt))
}

// Validate implements EmailData.
func (d ApplicationReceivedEmail) Validate() error {
	var addr error
	if _, err := ParseEmailAddress(d.ApplicantEmail); err != nil {
		addr = errors.New("applicant_email must be one email address")
	}
	return errors.Join(required("program_name", d.ProgramName), required("applicant_name", d.ApplicantName),
		addr, optional("message", d.Message), webURL("review_url", d.ReviewURL))
}

// Validate implements EmailData.
func (d ApplicationApprovedEmail) Validate() error {
	return errors.Join(required("program_name", d.ProgramName), required("partner_name", d.PartnerName),
		webURL("dashboard_url", d.DashboardURL))
}

// Validate implements EmailData.
func (d ApplicationRejectedEmail) Validate() error {
	return errors.Join(required("program_name", d.ProgramName), required("partner_name", d.PartnerName),
		optional("reason", d.Reason))
}

// CommissionDigestEmail is a partner's daily digest of the commissions
// they earned on one UTC day, per program: how many and how much per
// currency (never a customer).
type CommissionDigestEmail struct {
	PartnerName  string          `json:"partner_name"`
	Day          string          `json:"day"` // YYYY-MM-DD, UTC
	Programs     []DigestProgram `json:"programs"`
	DashboardURL string          `json:"dashboard_url"`
}

// DigestProgram is one program's line of a digest.
type DigestProgram struct {
	ProgramName string         `json:"program_name"`
	Count       int64          `json:"count"`
	Totals      []DigestAmount `json:"totals"`
}

// DigestAmount is a digest's total of one currency: exact major units
// ("1234.50") and the words people read ("$1,234.50").
type DigestAmount struct {
	Currency string `json:"currency"`
	Amount   string `json:"amount"`
	Words    string `json:"words"`
}

// EmailKind implements EmailData.
func (CommissionDigestEmail) EmailKind() string { return EmailCommissionDigest }

// Validate implements EmailData.
func (d CommissionDigestEmail) Validate() error {
	errs := []error{required("partner_name", d.PartnerName), webURL("dashboard_url", d.DashboardURL)}
	if _, err := time.Parse(time.DateOnly, d.Day); err != nil {
		errs = append(errs, errors.New("day must be a date (YYYY-MM-DD)"))
	}
	if len(d.Programs) == 0 {
		errs = append(errs, errors.New("programs "+msgEmailFieldRequiredTail))
	}
	for _, p := range d.Programs {
		errs = append(errs, required("programs.program_name", p.ProgramName))
		if p.Count <= 0 || len(p.Totals) == 0 {
			errs = append(errs, errors.New("programs must each count commissions and their totals"))
		}
		for _, a := range p.Totals {
			if _, ok := ParseCurrency(a.Currency); !ok {
				errs = append(errs, errors.New("programs.totals.currency must be a supported currency"))
			}
			errs = append(errs, required("programs.totals.amount", a.Amount), required("programs.totals.words", a.Words))
		}
	}
	return errors.Join(errs...)
}

// DecodeEmailData decodes the data of an email kind and validates it.
func DecodeEmailData(kind string, raw json.RawMessage) (EmailData, error) {
	var d EmailData
	switch kind {
	case EmailPartnerInvite:
		d = &PartnerInviteEmail{}
	case EmailApplicationReceived:
		d = &ApplicationReceivedEmail{}
	case EmailApplicationApproved:
		d = &ApplicationApprovedEmail{}
	case EmailApplicationRejected:
		d = &ApplicationRejectedEmail{}
	case EmailCommissionDigest:
		d = &CommissionDigestEmail{}
	case EmailPayoutPaid:
		d = &PayoutPaidEmail{}
	default:
		return nil, fmt.Errorf("unknown email kind %q", kind)
	}
	if err := json.Unmarshal(raw, d); err != nil {
		return nil, fmt.Errorf("%s data: %v", kind, err)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s data: %w", kind, err)
	}
	return d, nil
}

// ParseEmailAddress returns the bare address of one recipient ("Ann
// <ann@example.com>" or "ann@example.com").
func ParseEmailAddress(s string) (string, error) {
	a, err := mail.ParseAddress(strings.TrimSpace(s))
	if err != nil || len(a.Address) > maxEmailAddressLen {
		return "", errors.New(msgEmailRecipient)
	}
	return a.Address, nil
}

// EmailOutboxMessage builds the outbox message of one email, for the
// transaction of the change that causes it: the recipient is checked and
// reduced to its bare address, the data validated and stored as the
// template's data (never rendered).
func EmailOutboxMessage(to string, data EmailData) (OutboxMessage, error) {
	addr, err := ParseEmailAddress(to)
	if err != nil {
		return OutboxMessage{}, NewError(EInvalid, msgEmailRecipient)
	}
	if err := data.Validate(); err != nil {
		return OutboxMessage{}, NewError(EInvalid, err.Error())
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return OutboxMessage{}, err
	}
	payload, err := json.Marshal(Email{To: addr, Kind: data.EmailKind(), Data: raw})
	if err != nil {
		return OutboxMessage{}, err
	}
	return OutboxMessage{TaskType: OutboxTaskEmail, Queue: OutboxQueueEmails, Payload: payload}, nil
}

func required(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New(field + " " + msgEmailFieldRequiredTail)
	}
	return optional(field, v)
}

func optional(field, v string) error {
	if len(v) > maxEmailFieldLen {
		return errors.New(field + " " + msgEmailFieldTooLong)
	}
	return nil
}

func requiredTime(field string, t time.Time) error {
	if t.IsZero() {
		return errors.New(field + " " + msgEmailFieldRequiredTail)
	}
	return nil
}

func webURL(field, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(v) > maxWebhookURLLen {
		return errors.New(field + " " + msgEmailURL)
	}
	return nil
}
