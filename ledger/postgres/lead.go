package postgres

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// LeadService implements ledger.LeadService.
//
// Every lead of a customer runs under the customer row's lock (taken by
// customerForClick or customerByKey, or by id on settlement), so two leads,
// or a lead and a settlement, of one customer never interleave; the unique
// index leads_customer_id_key keeps one lead per customer whatever path
// writes it.
type LeadService struct {
	db      *DB
	pending ledger.PendingClicks
	after   *afterCommit
}

// NewLeadService returns the lead service over db. pending finds clicks the
// edge acknowledged whose batch has not reached Postgres yet; nil means
// only clicks already in Postgres resolve.
func NewLeadService(db *DB, pending ledger.PendingClicks) *LeadService {
	return &LeadService{db: db, pending: pending, after: &afterCommit{logger: slog.Default()}}
}

// WithRelay makes the service send the brand webhooks a lead writes to the
// outbox right after commit (without it they wait for the outbox sweep),
// and returns it.
func (s *LeadService) WithRelay(relay ledger.OutboxRelay, logger *slog.Logger) *LeadService {
	s.after = newAfterCommit(relay, logger)
	return s
}

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (s *LeadService) WaitRelays() { s.after.wait() }

var _ ledger.LeadService = (*LeadService)(nil)

// Sources of the tracking log rows of leads: how the lead arrived and
// whether it counts yet. A provisional lead's rows never count; the lead
// counts through the row of what settled it: the settling lead call's, or
// a settlement row when a payment settles it.
const (
	leadLogServer      = "server"
	leadLogBrowser     = "browser"
	leadLogProvisional = "browser_provisional"
	leadLogSettlement  = "settlement"
)

// TrackLead records a validated lead.
func (s *LeadService) TrackLead(ctx context.Context, req ledger.LeadRequest) (res *ledger.LeadResult, err error) {
	defer wrap(&err, "postgres.TrackLead(%s)", req.Mode)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var err error
		msgs = nil
		if req.Test {
			res, err = s.testLead(ctx, tx, req, now)
		} else {
			res, err = s.lead(ctx, tx, req, now)
			if err == nil && !res.Provisional {
				// The lead counts from now: the brand's lead.created.
				msgs, err = leadCreatedEvent(ctx, tx, res.LeadID, now)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return res, nil
}

// openLead is a customer's provisional lead that waits to settle.
type openLead struct {
	ID           int64
	CustomerKey  string
	Email        string
	SelfReferral bool
}

func (s *LeadService) lead(ctx context.Context, tx *sqlx.Tx, req ledger.LeadRequest, now time.Time) (*ledger.LeadResult, error) {
	cust, err := s.leadCustomer(ctx, tx, req, now)
	if err != nil {
		return nil, err
	}
	var leadAuth string
	if err := tx.QueryRowContext(ctx, `SELECT lead_auth FROM programs WHERE id = $1`, cust.ProgramID).Scan(&leadAuth); err != nil {
		return nil, err
	}
	open, err := openProvisionalLead(ctx, tx, cust.ID)
	if err != nil {
		return nil, err
	}
	// A customer whose provisional lead waits is still at its earlier
	// status (a provisional lead does not count), and settling that lead
	// is allowed even after a sale moved the customer on.
	if open == nil {
		if err := ledger.CheckLeadTransition(cust.Status); err != nil {
			return nil, err
		}
	}
	// The customer key names one person: when another customer of the
	// program already has it, that person has had their lead.
	if req.CustomerKey != "" {
		if err := checkKeyFree(ctx, tx, cust, req.CustomerKey); err != nil {
			return nil, err
		}
	}
	partnerEmail, err := leadPartnerEmail(ctx, tx, cust.PartnerID)
	if err != nil {
		return nil, err
	}
	selfRef := req.Email != "" && req.Email == partnerEmail

	provisional := ledger.LeadIsProvisional(req.Mode, leadAuth)
	res := &ledger.LeadResult{ProgramID: cust.ProgramID, CustomerID: cust.ID, ClickID: cust.ClickID, Provisional: provisional}
	switch {
	case open != nil && provisional:
		// Another browser lead before settlement: the same provisional
		// lead, its unverified details refreshed when given.
		res.LeadID = open.ID
		_, err = tx.ExecContext(ctx, `
			UPDATE leads SET customer_key = COALESCE(NULLIF($2, ''), customer_key),
				email = COALESCE(NULLIF($3, ''), email),
				session_id = COALESCE(NULLIF($4, ''), session_id),
				page_url = COALESCE(NULLIF($5, ''), page_url),
				event_name = COALESCE(NULLIF($6, ''), event_name),
				self_referral = self_referral OR $7
			WHERE id = $1`, open.ID, req.CustomerKey, req.Email, req.SessionID, req.PageURL, req.EventName, selfRef)
	case open != nil:
		res.LeadID = open.ID
		var saved bool
		saved, err = settleLead(ctx, tx, cust, open, ledger.SettledByMode(req.Mode), req.CustomerKey, req.Email, partnerEmail, now)
		if err == nil && !saved && req.CustomerKey != "" && cust.CustomerKey == "" {
			// Another customer took the key after checkKeyFree looked.
			err = keyTakenError(ctx, tx, cust.ProgramID, req.CustomerKey)
		}
	default:
		res.LeadID, err = insertLead(ctx, tx, cust, req, provisional, selfRef, now)
		if err == nil && !provisional {
			var saved bool
			saved, err = promoteCustomer(ctx, tx, cust, req.CustomerKey, req.Email, now)
			if err == nil && !saved && req.CustomerKey != "" {
				err = keyTakenError(ctx, tx, cust.ProgramID, req.CustomerKey)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	source := leadLogServer
	switch {
	case provisional:
		source = leadLogProvisional
	case req.Mode == ledger.LeadModeBrowser:
		source = leadLogBrowser
	}
	if err := insertLeadLog(ctx, tx, cust.ProgramID, cust.IsTest, source, res.LeadID, now); err != nil {
		return nil, err
	}
	return res, nil
}

// leadCustomer resolves the customer a lead is for, locked for the rest of
// tx. The click id comes first (a click still in the queue included); in
// server mode a saved customer key is the fallback. A click of another
// program is refused before any customer is created for it.
func (s *LeadService) leadCustomer(ctx context.Context, tx *sqlx.Tx, req ledger.LeadRequest, now time.Time) (*ledger.Customer, error) {
	if req.ClickID != "" {
		click, err := resolveClick(ctx, tx, nil, s.pending, req.ClickID)
		switch {
		case err == nil:
			if !leadProgramMatches(req, click.ProgramID) {
				return nil, ledger.NewError(ledger.EInvalid, ledger.MsgLeadOtherProgram)
			}
			return customerForClick(ctx, tx, click, now)
		case ledger.ErrorCode(err) != ledger.ENotFound:
			return nil, err
		}
	}
	if req.Mode == ledger.LeadModeServer && req.CustomerKey != "" {
		cust, err := customerByKey(ctx, tx, nil, req.ProgramID, req.CustomerKey)
		if ledger.ErrorCode(err) != ledger.ENotFound {
			return cust, err
		}
	}
	return nil, ledger.NewError(ledger.EInvalid, ledger.MsgLeadCustomerNotFound)
}

// leadProgramMatches reports whether a click of programID may carry the
// lead: the key's program in server mode, the named program (if any) in
// browser mode.
func leadProgramMatches(req ledger.LeadRequest, programID int64) bool {
	if req.Mode == ledger.LeadModeServer {
		return programID == req.ProgramID
	}
	return req.ProgramHint == "" || req.ProgramHint == strconv.FormatInt(programID, 10)
}

// checkKeyFree refuses a lead whose customer key another customer of the
// program already has, with that customer's status (a saved key means a
// settled lead).
func checkKeyFree(ctx context.Context, tx *sqlx.Tx, cust *ledger.Customer, key string) error {
	var otherID int64
	var status string
	err := tx.QueryRowContext(ctx, `SELECT id, status FROM customers WHERE program_id = $1 AND customer_key = $2`,
		cust.ProgramID, key).Scan(&otherID, &status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	case otherID == cust.ID:
		return ledger.CheckLeadTransition(status)
	}
	return ledger.NewError(ledger.EInvalid, ledger.MsgLeadStatus(status))
}

// keyTakenError is the refusal of a lead whose key a concurrent lead of
// another customer saved first.
func keyTakenError(ctx context.Context, tx *sqlx.Tx, programID int64, key string) error {
	var status string
	if err := tx.QueryRowContext(ctx, `SELECT status FROM customers WHERE program_id = $1 AND customer_key = $2`,
		programID, key).Scan(&status); err != nil {
		return err
	}
	return ledger.NewError(ledger.EInvalid, ledger.MsgLeadStatus(status))
}

// openProvisionalLead returns the customer's provisional lead that waits to
// settle, locked, or nil.
func openProvisionalLead(ctx context.Context, tx *sqlx.Tx, customerID int64) (*openLead, error) {
	l := &openLead{}
	err := tx.QueryRowContext(ctx, `
		SELECT id, COALESCE(customer_key, ''), COALESCE(email, ''), self_referral FROM leads
		WHERE customer_id = $1 AND provisional AND settled_at IS NULL
		FOR UPDATE`, customerID).Scan(&l.ID, &l.CustomerKey, &l.Email, &l.SelfReferral)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// leadPartnerEmail returns the email of the customer's partner ("" when
// the customer has none), for the self-referral signal.
func leadPartnerEmail(ctx context.Context, tx *sqlx.Tx, partnerID *int64) (string, error) {
	if partnerID == nil {
		return "", nil
	}
	var email string
	err := tx.QueryRowContext(ctx, `SELECT email FROM partners WHERE id = $1`, *partnerID).Scan(&email)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return email, err
}

// insertLead writes a new lead of cust: provisional, or settled on arrival
// (a server-mode lead, or a browser-mode one on a browser_allowed program).
func insertLead(ctx context.Context, tx *sqlx.Tx, cust *ledger.Customer, req ledger.LeadRequest, provisional, selfRef bool, now time.Time) (int64, error) {
	var settledAt *time.Time
	var settledBy *string
	if !provisional {
		by := ledger.SettledByMode(req.Mode)
		settledAt, settledBy = &now, &by
		// The lead counts from here: TrackLead writes the brand's
		// lead.created webhook in this transaction.
	}
	var id int64
	err := tx.QueryRowContext(ctx, `
		INSERT INTO leads (program_id, customer_id, partner_id, click_id, customer_key, email, session_id,
			page_url, event_name, mode, provisional, settled_at, settled_by, self_referral, is_test,
			occurred_at, created_at)
		VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, ''), NULLIF($7, ''), NULLIF($8, ''), NULLIF($9, ''),
			$10, $11, $12, $13, $14, $15, $16, $16)
		RETURNING id`,
		cust.ProgramID, cust.ID, cust.PartnerID, cust.ClickID, req.CustomerKey, req.Email, req.SessionID,
		req.PageURL, req.EventName, req.Mode, provisional, settledAt, settledBy, selfRef, cust.IsTest, now).Scan(&id)
	return id, err
}

// settleLead settles cust's provisional lead: the lead counts from now,
// keeping the key and email of the settling call when given (else its
// own), and the customer is promoted. It reports whether the key was saved
// on the customer.
func settleLead(ctx context.Context, tx *sqlx.Tx, cust *ledger.Customer, open *openLead, by, key, email, partnerEmail string, now time.Time) (keySaved bool, err error) {
	if key == "" {
		key = open.CustomerKey
	}
	if email == "" {
		email = open.Email
	}
	selfRef := open.SelfReferral || (email != "" && email == partnerEmail)
	_, err = tx.ExecContext(ctx, `
		UPDATE leads SET settled_at = $2, settled_by = $3, customer_key = NULLIF($4, ''),
			email = NULLIF($5, ''), self_referral = $6
		WHERE id = $1`, open.ID, now, by, key, email, selfRef)
	if err != nil {
		return false, err
	}
	// The lead counts from here: the callers write the brand's
	// lead.created webhook in this transaction.
	return promoteCustomer(ctx, tx, cust, key, email, now)
}

// promoteCustomer moves a customer whose lead settled to lead (never back),
// stores the email when given, and saves the customer key unless the
// customer has one or another customer of the program already has it. It
// reports whether it saved the key.
func promoteCustomer(ctx context.Context, tx *sqlx.Tx, cust *ledger.Customer, key, email string, now time.Time) (keySaved bool, err error) {
	status := ledger.AdvanceFunnel(cust.Status, ledger.FunnelLead)
	_, err = tx.ExecContext(ctx, `
		UPDATE customers SET status = $2, email = COALESCE(NULLIF($3, ''), email), updated_at = $4
		WHERE id = $1`, cust.ID, status, email, now)
	if err != nil {
		return false, err
	}
	cust.Status = status
	if email != "" {
		cust.Email = email
	}
	if key == "" || cust.CustomerKey != "" {
		return false, nil
	}
	// A savepoint keeps the transaction usable when the key is taken.
	if _, err := tx.ExecContext(ctx, `SAVEPOINT save_customer_key`); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE customers SET customer_key = $2 WHERE id = $1`, cust.ID, key)
	if uniqueViolation(err) == "customers_program_customer_key_key" {
		_, err = tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT save_customer_key`)
		return false, err
	}
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT save_customer_key`); err != nil {
		return false, err
	}
	cust.CustomerKey = key
	return true, nil
}

// insertLeadLog writes the tracking log row of a lead call.
func insertLeadLog(ctx context.Context, tx *sqlx.Tx, programID int64, isTest bool, source string, leadID int64, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
		VALUES ($1, 'lead', $2, $3, $4, $5)`, programID, isTest, source, strconv.FormatInt(leadID, 10), now)
	return err
}

// testLead records a test-mode lead: a lead row and a tracking log row,
// both flagged, in the key's program (browser mode: the program named by
// program_id, else the click's). No customer is resolved or moved, so a
// brand can test before it has any click.
func (s *LeadService) testLead(ctx context.Context, tx *sqlx.Tx, req ledger.LeadRequest, now time.Time) (*ledger.LeadResult, error) {
	programID := req.ProgramID
	if req.Mode == ledger.LeadModeBrowser {
		var err error
		if programID, err = s.testLeadProgram(ctx, tx, req); err != nil {
			return nil, err
		}
	}
	var id int64
	err := tx.QueryRowContext(ctx, `
		INSERT INTO leads (program_id, click_id, customer_key, email, session_id, page_url, event_name,
			mode, is_test, occurred_at, created_at)
		VALUES ($1, NULLIF($2, ''), NULLIF($3, ''), NULLIF($4, ''), NULLIF($5, ''), NULLIF($6, ''),
			NULLIF($7, ''), $8, true, $9, $9)
		RETURNING id`,
		programID, req.ClickID, req.CustomerKey, req.Email, req.SessionID, req.PageURL, req.EventName,
		req.Mode, now).Scan(&id)
	if err != nil {
		return nil, err
	}
	source := leadLogServer
	if req.Mode == ledger.LeadModeBrowser {
		source = leadLogBrowser
	}
	if err := insertLeadLog(ctx, tx, programID, true, source, id, now); err != nil {
		return nil, err
	}
	return &ledger.LeadResult{LeadID: id, ProgramID: programID, ClickID: req.ClickID, Test: true}, nil
}

func (s *LeadService) testLeadProgram(ctx context.Context, tx *sqlx.Tx, req ledger.LeadRequest) (int64, error) {
	if req.ProgramHint != "" {
		id, ok := ledger.ParseProgramHint(req.ProgramHint)
		var exists bool
		if ok {
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM programs WHERE id = $1)`, id).Scan(&exists); err != nil {
				return 0, err
			}
		}
		if !exists {
			return 0, ledger.NewError(ledger.EInvalid, ledger.MsgUnknownProgramID)
		}
		return id, nil
	}
	click, err := resolveClick(ctx, tx, nil, s.pending, req.ClickID)
	if ledger.ErrorCode(err) == ledger.ENotFound {
		return 0, ledger.NewError(ledger.EInvalid, ledger.MsgLeadTestProgram)
	}
	if err != nil {
		return 0, err
	}
	return click.ProgramID, nil
}

// SettleProvisionalLead settles the customer's provisional lead, if any.
func (s *LeadService) SettleProvisionalLead(ctx context.Context, st ledger.Settlement) (res *ledger.SettleResult, err error) {
	defer wrap(&err, "postgres.SettleProvisionalLead(%d, %d)", st.ProgramID, st.CustomerID)
	if st.By == "" {
		st.By = ledger.SettledByProcessorPayment
	}
	if st.By != ledger.SettledByProcessorPayment && st.By != ledger.SettledByServerLead {
		return nil, ledger.Errorf(ledger.EInvalid, "settlement by %q is not one of: %s, %s",
			st.By, ledger.SettledByProcessorPayment, ledger.SettledByServerLead)
	}
	if st.CustomerKey != "" && !ledger.ValidCustomerKey(st.CustomerKey) {
		st.CustomerKey = "" // a key the brand could never send names no one
	}
	st.Email, _ = ledger.NormalizeEmail(st.Email)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		msgs = nil
		res = &ledger.SettleResult{}
		cust, err := scanCustomer(tx.QueryRowContext(ctx, `SELECT `+customerColumns+`
			FROM customers WHERE id = $1 AND program_id = $2 FOR NO KEY UPDATE`, st.CustomerID, st.ProgramID))
		if err != nil {
			return err
		}
		open, err := openProvisionalLead(ctx, tx, cust.ID)
		if err != nil || open == nil {
			return err
		}
		partnerEmail, err := leadPartnerEmail(ctx, tx, cust.PartnerID)
		if err != nil {
			return err
		}
		res.LeadID = open.ID
		res.KeySaved, err = settleLead(ctx, tx, cust, open, st.By, st.CustomerKey, st.Email, partnerEmail, now)
		res.Settled = err == nil
		if err == nil {
			// The lead counts from now, once: in the 24-hour counts
			// through this row, and for the brand through lead.created.
			err = insertLeadLog(ctx, tx, cust.ProgramID, cust.IsTest, leadLogSettlement, open.ID, now)
		}
		if err == nil {
			msgs, err = leadCreatedEvent(ctx, tx, open.ID, now)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return res, nil
}

// FindCustomer returns a program's customer by saved key or click id.
func (s *LeadService) FindCustomer(ctx context.Context, q ledger.CustomerQuery) (v *ledger.CustomerView, err error) {
	defer wrap(&err, "postgres.FindCustomer(%d)", q.ProgramID)
	column, value := "customer_key", q.CustomerKey
	if value == "" {
		column, value = "click_id", q.ClickID
	}
	if value == "" {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgCustomerLookup)
	}
	v = &ledger.CustomerView{}
	row := s.db.QueryRowContext(ctx, `SELECT `+customerColumns+`,
			EXISTS (SELECT 1 FROM leads l WHERE l.customer_id = customers.id AND l.provisional AND l.settled_at IS NULL)
		FROM customers WHERE program_id = $1 AND `+column+` = $2`, q.ProgramID, value)
	cust, err := scanCustomer(withExtra{row, []any{&v.Provisional}})
	if err != nil {
		return nil, err
	}
	v.Customer = *cust
	return v, nil
}

// withExtra scans a row of customerColumns followed by more columns.
type withExtra struct {
	row   *sql.Row
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.row.Scan(append(dest, w.extra...)...) }
