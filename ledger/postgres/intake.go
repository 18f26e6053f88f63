package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// IntakeService implements ledger.InviteService and
// ledger.ApplicationService: how partners join a brand's program (invites,
// the public page's applications). Every change writes its audit row, its
// emails and its partner.enrolled webhooks in its own transaction; the
// outbox messages are relayed after commit.
type IntakeService struct {
	db      *DB
	baseURL string // PUBLIC_BASE_URL: invite links and the emails' pages
	after   *afterCommit
}

// IntakeOptions are the parts of an IntakeService.
type IntakeOptions struct {
	// PublicBaseURL starts the links in emails (accept_url, review_url,
	// dashboard_url).
	PublicBaseURL string
	// Relay sends committed outbox messages at once; nil leaves them to
	// the outbox sweep.
	Relay  ledger.OutboxRelay
	Logger *slog.Logger
}

// NewIntakeService returns the invite and application service over db.
func NewIntakeService(db *DB, opts IntakeOptions) *IntakeService {
	return &IntakeService{db: db, baseURL: strings.TrimRight(opts.PublicBaseURL, "/"),
		after: newAfterCommit(opts.Relay, opts.Logger)}
}

var (
	_ ledger.InviteService      = (*IntakeService)(nil)
	_ ledger.ApplicationService = (*IntakeService)(nil)
)

// WaitRelays waits for the relays started after commits.
func (s *IntakeService) WaitRelays() { s.after.wait() }

// checkGroup reports whether groupID is a group of the program.
// Errors: EInvalid (MsgGroupID).
func checkGroup(ctx context.Context, tx *sqlx.Tx, programID int64, groupID *int64) error {
	if groupID == nil {
		return nil
	}
	var ok bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM partner_groups WHERE program_id = $1 AND id = $2)`,
		programID, *groupID).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return ledger.NewError(ledger.EInvalid, ledger.MsgGroupID)
	}
	return nil
}

// isPartner reports whether email is an active or suspended partner of the
// program (a removed one may join again).
func isPartner(ctx context.Context, tx *sqlx.Tx, programID int64, email string) (bool, error) {
	var ok bool
	err := tx.QueryRowContext(ctx, `
		SELECT EXISTS (SELECT 1 FROM enrollments e JOIN partners p ON p.id = e.partner_id
			WHERE e.program_id = $1 AND p.email = $2 AND e.status IN ('active', 'suspended'))`,
		programID, email).Scan(&ok)
	return ok, err
}

// enrollActive makes email an active partner of the program: the partner
// is found by email or created with name, enrolled in groupID (nil: the
// default group, which the enrollments trigger fills), given a link with
// a generated code (insertLink, the one link INSERT), and the
// partner.enrolled webhook is written. A removed partner is enrolled
// again. Errors: EConflict (MsgAlreadyPartner).
func enrollActive(ctx context.Context, tx *sqlx.Tx, programID int64, email, name string, groupID *int64, now time.Time) (*ledger.Enrollment, []ledger.OutboxMessage, error) {
	en := &ledger.Enrollment{ProgramID: programID}
	if err := tx.QueryRowContext(ctx, `
		INSERT INTO partners (email, name, created_at) VALUES ($1, $2, $3)
		ON CONFLICT ON CONSTRAINT partners_email_key DO UPDATE SET email = EXCLUDED.email
		RETURNING id, email, name`, email, name, now).Scan(&en.PartnerID, &en.Email, &en.Name); err != nil {
		return nil, nil, err
	}
	err := tx.QueryRowContext(ctx, `
		INSERT INTO enrollments (program_id, partner_id, group_id, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (program_id, partner_id) DO UPDATE SET status = 'active', group_id = EXCLUDED.group_id
			WHERE enrollments.status = 'removed'
		RETURNING group_id, created_at`, programID, en.PartnerID, groupID, now).Scan(&en.GroupID, &en.JoinedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ledger.NewError(ledger.EConflict, ledger.MsgAlreadyPartner)
	} else if err != nil {
		return nil, nil, err
	}
	en.JoinedAt = en.JoinedAt.UTC()
	// A random code of 10 characters from 36 collides with a taken one
	// about never; a code found taken is drawn again.
	code := ledger.NewLinkCode()
	for range 5 {
		var taken bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM links WHERE code = $1)`, code).Scan(&taken); err != nil {
			return nil, nil, err
		}
		if !taken {
			break
		}
		code = ledger.NewLinkCode()
	}
	l, err := insertLink(ctx, tx, programID, en.PartnerID, code, true, now)
	if err != nil {
		return nil, nil, err
	}
	en.LinkID, en.LinkCode = l.ID, l.Code
	msgs, err := brandEvent(ctx, tx, programID, ledger.EventPartnerEnrolled, ledger.PartnerEventData{
		PartnerID: en.PartnerID, ProgramID: programID, Name: en.Name, Email: en.Email,
		Status: "active", GroupID: en.GroupID, JoinedAt: ledger.FormatTime(en.JoinedAt),
	}, now)
	if err != nil {
		return nil, nil, err
	}
	return en, msgs, nil
}

// insertEmail writes one email to the outbox in the caller's transaction.
func insertEmail(ctx context.Context, tx *sqlx.Tx, to string, data ledger.EmailData, now time.Time) (ledger.OutboxMessage, error) {
	m, err := ledger.EmailOutboxMessage(to, data)
	if err != nil {
		return ledger.OutboxMessage{}, err
	}
	return insertOutbox(ctx, tx, m.TaskType, m.Queue, json.RawMessage(m.Payload), now)
}

// programBrief is what the intake writes need of a program.
type programBrief struct {
	id          int64
	workspaceID int64
	name        string
	status      string
	approval    string
}

// lockProgram reads a program for a change of its partners, holding a
// key-share lock, as insertLink does, so the program is not deleted under
// the change. Errors: ENotFound.
func lockProgram(ctx context.Context, tx *sqlx.Tx, programID int64) (*programBrief, error) {
	p := &programBrief{}
	err := tx.QueryRowContext(ctx, `
		SELECT id, workspace_id, name, status, partner_approval FROM programs WHERE id = $1 FOR KEY SHARE`,
		programID).Scan(&p.id, &p.workspaceID, &p.name, &p.status, &p.approval)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("program")
	}
	return p, err
}

// brandRecipients are the emails of the owners and admins of the
// program's workspace (suspended users left out).
func brandRecipients(ctx context.Context, tx *sqlx.Tx, workspaceID int64) ([]string, error) {
	var emails []string
	err := tx.SelectContext(ctx, &emails, `
		SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE m.workspace_id = $1 AND m.role IN ('owner', 'admin') AND u.suspended_at IS NULL
		ORDER BY u.id`, workspaceID)
	return emails, err
}
