package ledger

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// MaxGroups is how many groups a program may have, its default group
// included: the group listing is one unpaged answer.
const MaxGroups = 100

// Messages of the group routes; the terms' messages are the program's
// (ProgramInput: MsgInvalidCommissionType, MsgCommissionRate, ...).
const (
	MsgGroupName      = "name must be a string of 1 to 100 characters"
	MsgGroupNameTaken = "name is already used by another group of this program"
	MsgGroupNoChange  = "Missing fields: send at least one of name, commission_type, commission_rate, duration_months, hold_days"
	MsgGroupLimit     = "a program has at most 100 groups"
)

// CommissionTerms are what a group pays: the program's commission fields
// with the program's names and rules.
type CommissionTerms struct {
	Type           CommissionType
	Rate           decimal.Decimal
	DurationMonths int
	HoldDays       int
}

// ProgramTerms are a program's own commission terms (its default group's).
func ProgramTerms(p *Program) CommissionTerms {
	return CommissionTerms{Type: p.CommissionType, Rate: p.CommissionRate, DurationMonths: p.DurationMonths, HoldDays: p.HoldDays}
}

// applyTo sets the commission fields of p to t.
func (t CommissionTerms) applyTo(p *Program) {
	p.CommissionType, p.CommissionRate, p.DurationMonths, p.HoldDays = t.Type, t.Rate, t.DurationMonths, t.HoldDays
}

// Equal reports whether two terms pay the same.
func (t CommissionTerms) Equal(o CommissionTerms) bool {
	return t.Type == o.Type && t.Rate.Equal(o.Rate) && t.DurationMonths == o.DurationMonths && t.HoldDays == o.HoldDays
}

// CommissionPolicy is one version of a group's terms. A version is never
// changed: new terms are a new version, and a commission keeps the
// version in force when its sale was recorded.
type CommissionPolicy struct {
	ID      int64
	GroupID int64
	Terms   CommissionTerms
}

// PartnerGroup is a group of a program's partners with its terms. The
// default group (IsDefault) has no policy: its terms are the program's own
// commission fields, changed through the program settings' write path.
type PartnerGroup struct {
	ID        int64
	ProgramID int64
	Name      string
	IsDefault bool
	PolicyID  *int64 // the current version; nil for the default group
	Terms     CommissionTerms
	// Partners counts the group's partners that are not removed (active or
	// suspended), the synthetic test partner left out.
	Partners  int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// GroupInput is a group as the brand sends it at creation or in a change.
type GroupInput struct {
	Name           Input[string]
	CommissionType Input[string]
	CommissionRate Input[decimal.Decimal]
	DurationMonths Input[int64]
	HoldDays       Input[int64]
}

// TermsInput is the terms part of the input as a program update: the
// terms are checked by the program's own rules and messages, and it is
// what a change of the default group's terms writes to the program.
func (in GroupInput) TermsInput() ProgramInput {
	return ProgramInput{CommissionType: in.CommissionType, CommissionRate: in.CommissionRate,
		DurationMonths: in.DurationMonths, HoldDays: in.HoldDays}
}

// ChangesTerms reports whether the input sends any of the terms.
func (in GroupInput) ChangesTerms() bool {
	return in.CommissionType.Present || in.CommissionRate.Present || in.DurationMonths.Present || in.HoldDays.Present
}

// Empty reports whether the input sends nothing at all.
func (in GroupInput) Empty() bool { return !in.Name.Present && !in.ChangesTerms() }

// ValidateName checks the name when it is sent and returns it trimmed.
func (in GroupInput) ValidateName() (string, error) {
	name := strings.TrimSpace(in.Name.Value)
	if in.Name.Bad || name == "" || utf8.RuneCountInString(name) > 100 || !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
		return "", NewError(EInvalid, MsgGroupName)
	}
	return name, nil
}

// ApplyTerms validates the sent terms against cur, in the program's order
// and with its messages (ProgramInput.ApplyUpdate: the percentage cap is
// checked on the result, whichever of type and rate changed), and returns
// the terms that result.
func (in GroupInput) ApplyTerms(cur CommissionTerms) (CommissionTerms, error) {
	p := Program{}
	cur.applyTo(&p)
	if err := in.TermsInput().ApplyUpdate(&p); err != nil {
		return cur, err
	}
	return ProgramTerms(&p), nil
}

// ValidateCreate checks a new group: the name is required; the terms not
// sent are the program's current ones (base), so a group made with a name
// alone starts as a copy of the program's terms.
func (in GroupInput) ValidateCreate(base CommissionTerms) (string, CommissionTerms, error) {
	if !in.Name.Present {
		return "", base, NewError(EInvalid, MsgGroupName)
	}
	name, err := in.ValidateName()
	if err != nil {
		return "", base, err
	}
	terms, err := in.ApplyTerms(base)
	return name, terms, err
}

// GroupService reads and changes a program's groups. Every change is
// written to the program's audit log by actor, in its transaction.
type GroupService interface {
	// Groups lists every group of the program, the default one first, then
	// by id. Errors: ENotFound (program).
	Groups(ctx context.Context, programID int64) ([]PartnerGroup, error)
	// CreateGroup creates a group and the first version of its terms.
	// Errors: EInvalid, EConflict (name taken, MaxGroups reached),
	// ENotFound (program).
	CreateGroup(ctx context.Context, programID, actorID int64, in GroupInput) (*PartnerGroup, error)
	// UpdateGroup renames a group and/or changes its terms: new terms of a
	// group are a new version the group points to; the default group's
	// terms are the program's fields, written by the program settings'
	// write path in the same transaction. Errors: EInvalid, EConflict
	// (name taken), ENotFound (group of the program).
	UpdateGroup(ctx context.Context, programID, groupID, actorID int64, in GroupInput) (*PartnerGroup, error)
}
