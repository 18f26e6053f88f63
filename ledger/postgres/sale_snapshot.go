package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// qSaleSnapshots reads, for each sale (arrays of program $1, transaction
// id $2, customer key $3, click id $4 and its time $5, the processor's
// customer $6, 0 for none), the snapshot ledger.PlanSale decides on: the
// program, a sale already recorded with the transaction id, the customer
// (the processor's, else by key, else by click) locked, else the click
// and an id for the customer it brings, the partner's active enrollment
// with its group's current terms version (none for the default group,
// whose terms are the program's: ledger.SaleSnapshot.Terms) and the
// webhook endpoints ($7, $8 name the events). It also makes the rest of
// the transaction use the generic plans of its prepared statements
// (set_config, as SET LOCAL): statements on the partitioned clicks table
// are otherwise planned anew on every call (docs/decisions.md). And it
// turns off scans of whole tables, hash joins and merge joins for the
// rest of the transaction (keyed_plans): the write's generic plan is made
// once per connection and kept, and one made while customers was small
// scanned all of them for the few a batch converts, ever more as the
// table grew ("Stale rollup plans"); without those, every row is looked
// up by its key, whatever the statistics say. The
// arrays are read through sub-selects so that a custom plan cannot see
// their lengths. Every row read says LIMIT 1 (true anyway of the keys it
// reads by): a lateral subquery with a limit is read by its index for
// each sale, where a join could be planned as a scan of the whole table
// (all the click partitions) whenever the plan was made on small tables;
// the clicks are also matched on the times parameter itself, so that the
// plan keeps only the partitions of the batch's clicks when it starts.
var qSaleSnapshots = `
		WITH u AS (
			SELECT * FROM unnest((SELECT $1::bigint[]), (SELECT $2::text[]), (SELECT $3::text[]), (SELECT $4::text[]),
				(SELECT $5::timestamptz[]), (SELECT $6::bigint[]))
				WITH ORDINALITY AS u (program_id, transaction_id, customer_key, click_id, click_at, customer_id, ord)
		)
		SELECT u.ord, ` + programFields + `, '' AS masked,
			(SELECT id FROM sales WHERE processor_event_id = u.transaction_id) AS duplicate_of,
			set_config('plan_cache_mode', 'force_generic_plan', true) AS plan_cache_mode,
			set_config('enable_seqscan', 'off', true) || set_config('enable_hashjoin', 'off', true)
				|| set_config('enable_mergejoin', 'off', true) AS keyed_plans,
			` + snapshotCustomerColumns + `,
			cl.program_id AS click_program_id, cl.partner_id AS click_partner_id, cl.link_id AS click_link_id,
			cl.occurred_at AS click_occurred_at, cl.is_test AS click_is_test,
			CASE WHEN cl.program_id IS NOT NULL THEN nextval('customers_id_seq') END AS new_customer_id,
			en.partner_id IS NOT NULL AS enrolled,
			en.policy_id, en.commission_type AS policy_type, en.commission_rate AS policy_rate,
			en.duration_months AS policy_duration_months, en.hold_days AS policy_hold_days,
			` + endpointsFor("p.id", "$7") + ` AS sale_endpoints,
			` + endpointsFor("p.id", "$8") + ` AS commission_endpoints
		FROM u
		CROSS JOIN LATERAL (SELECT * FROM programs WHERE id = u.program_id LIMIT 1) p
		LEFT JOIN LATERAL (
			SELECT ` + customerColumns + ` FROM customers
			WHERE id = u.customer_id AND program_id = p.id
			FOR NO KEY UPDATE LIMIT 1
		) ci (` + customerNames + `) ON true
		LEFT JOIN LATERAL (
			SELECT ` + customerColumns + ` FROM customers
			WHERE program_id = p.id AND customer_key = u.customer_key AND u.customer_key <> '' AND ci.id IS NULL
			FOR NO KEY UPDATE LIMIT 1
		) ck (` + customerNames + `) ON true
		LEFT JOIN LATERAL (
			SELECT ` + customerColumns + ` FROM customers
			WHERE program_id = p.id AND click_id = u.click_id AND u.click_id <> '' AND ci.id IS NULL AND ck.id IS NULL
			FOR NO KEY UPDATE LIMIT 1
		) cc (` + customerNames + `) ON true
		LEFT JOIN LATERAL (
			SELECT program_id, partner_id, link_id, occurred_at, is_test FROM clicks
			WHERE click_id = u.click_id AND occurred_at = u.click_at AND occurred_at = ANY ($5::timestamptz[])
				AND ci.id IS NULL AND ck.id IS NULL AND cc.id IS NULL
			LIMIT 1
		) cl ON true
		LEFT JOIN LATERAL (
			SELECT e.partner_id, g.policy_id, cp.commission_type, cp.commission_rate, cp.duration_months, cp.hold_days
			FROM enrollments e
			JOIN partner_groups g ON g.id = e.group_id
			LEFT JOIN commission_policies cp ON cp.id = g.policy_id
			WHERE e.program_id = p.id AND e.status = 'active'
				AND e.partner_id = COALESCE(ci.partner_id, ck.partner_id, cc.partner_id, cl.partner_id)
			LIMIT 1
		) en ON true`

// endpointsFor lists the ids of a program's live webhook endpoints that
// want an event (SQL expressions of both).
func endpointsFor(program, event string) string {
	return `ARRAY(SELECT id FROM webhook_endpoints
				WHERE program_id = ` + program + ` AND deleted_at IS NULL AND ` + event + ` = ANY (events) ORDER BY id)`
}

// customerNames name the columns of customerColumns, for a subquery that
// selects them.
const customerNames = `id, program_id, partner_id, link_id, click_id, customer_key, email, status,
	processor_customer_id, first_paid_at, is_test, created_at`

// snapshotCustomerColumns are the sale's customer in qSaleSnapshots: the
// processor's (ci), else the one with the sale's customer key (ck), else
// the one its click brought (cc); each is read only when the ones before
// found none, so each column comes whole from one of them.
const snapshotCustomerColumns = `COALESCE(ci.id, ck.id, cc.id) AS customer_id,
			COALESCE(ci.partner_id, ck.partner_id, cc.partner_id) AS customer_partner_id,
			COALESCE(ci.link_id, ck.link_id, cc.link_id) AS customer_link_id,
			COALESCE(ci.click_id, ck.click_id, cc.click_id) AS customer_click_id,
			COALESCE(ci.customer_key, ck.customer_key, cc.customer_key) AS customer_key,
			COALESCE(ci.email, ck.email, cc.email) AS customer_email,
			COALESCE(ci.status, ck.status, cc.status) AS customer_status,
			COALESCE(ci.processor_customer_id, ck.processor_customer_id, cc.processor_customer_id) AS customer_processor_id,
			COALESCE(ci.first_paid_at, ck.first_paid_at, cc.first_paid_at) AS customer_first_paid_at,
			COALESCE(ci.is_test, ck.is_test, cc.is_test) AS customer_is_test,
			COALESCE(ci.created_at, ck.created_at, cc.created_at) AS customer_created_at`

// snapshotRow is a row of qSaleSnapshots.
type snapshotRow struct {
	Ord int `db:"ord"`
	programRow
	DuplicateOf         sql.NullInt64       `db:"duplicate_of"`
	PlanCacheMode       string              `db:"plan_cache_mode"`
	KeyedPlans          string              `db:"keyed_plans"`
	CustomerID          sql.NullInt64       `db:"customer_id"`
	CustomerPartnerID   *int64              `db:"customer_partner_id"`
	CustomerLinkID      *int64              `db:"customer_link_id"`
	CustomerClickID     sql.NullString      `db:"customer_click_id"`
	CustomerKey         sql.NullString      `db:"customer_key"`
	CustomerEmail       sql.NullString      `db:"customer_email"`
	CustomerStatus      sql.NullString      `db:"customer_status"`
	CustomerProcessorID sql.NullString      `db:"customer_processor_id"`
	CustomerFirstPaidAt *time.Time          `db:"customer_first_paid_at"`
	CustomerIsTest      sql.NullBool        `db:"customer_is_test"`
	CustomerCreatedAt   sql.NullTime        `db:"customer_created_at"`
	ClickProgramID      sql.NullInt64       `db:"click_program_id"`
	ClickPartnerID      *int64              `db:"click_partner_id"`
	ClickLinkID         *int64              `db:"click_link_id"`
	ClickOccurredAt     sql.NullTime        `db:"click_occurred_at"`
	ClickIsTest         sql.NullBool        `db:"click_is_test"`
	NewCustomerID       sql.NullInt64       `db:"new_customer_id"`
	Enrolled            bool                `db:"enrolled"`
	PolicyID            sql.NullInt64       `db:"policy_id"`
	PolicyType          sql.NullString      `db:"policy_type"`
	PolicyRate          decimal.NullDecimal `db:"policy_rate"`
	PolicyDuration      sql.NullInt32       `db:"policy_duration_months"`
	PolicyHoldDays      sql.NullInt32       `db:"policy_hold_days"`
	SaleEndpoints       pq.Int64Array       `db:"sale_endpoints"`
	CommissionEndpoints pq.Int64Array       `db:"commission_endpoints"`
}

func (r *snapshotRow) snapshot(clickID string) *ledger.SaleSnapshot {
	snap := &ledger.SaleSnapshot{Program: r.program(), DuplicateOf: r.DuplicateOf.Int64, Enrolled: r.Enrolled,
		SaleEndpoints: r.SaleEndpoints, CommissionEndpoints: r.CommissionEndpoints}
	if r.PolicyID.Valid {
		snap.Policy = &ledger.CommissionPolicy{ID: r.PolicyID.Int64, Terms: ledger.CommissionTerms{
			Type: ledger.CommissionType(r.PolicyType.String), Rate: r.PolicyRate.Decimal,
			DurationMonths: int(r.PolicyDuration.Int32), HoldDays: int(r.PolicyHoldDays.Int32)}}
	}
	if r.CustomerID.Valid {
		snap.Customer = &ledger.Customer{
			ID: r.CustomerID.Int64, ProgramID: r.ID, PartnerID: r.CustomerPartnerID, LinkID: r.CustomerLinkID,
			ClickID: r.CustomerClickID.String, CustomerKey: r.CustomerKey.String, Email: r.CustomerEmail.String,
			Status: r.CustomerStatus.String, ProcessorCustomerID: r.CustomerProcessorID.String,
			FirstPaidAt: r.CustomerFirstPaidAt, IsTest: r.CustomerIsTest.Bool, CreatedAt: r.CustomerCreatedAt.Time.UTC(),
		}
	}
	if r.ClickProgramID.Valid {
		snap.Click = &ledger.Click{ID: clickID, OccurredAt: r.ClickOccurredAt.Time.UTC(), ProgramID: r.ClickProgramID.Int64,
			PartnerID: r.ClickPartnerID, LinkID: r.ClickLinkID, IsTest: r.ClickIsTest.Bool}
		snap.NewCustomerID = r.NewCustomerID.Int64
	}
	return snap
}

// readSnapshots reads the snapshot of each sale, in their order; nil
// where the sale's program does not exist. A test sale looks for no
// customer.
func (s *SaleService) readSnapshots(ctx context.Context, tx *sqlx.Tx, items []*saleItem) ([]*ledger.SaleSnapshot, error) {
	n := len(items)
	programs, customers := make([]int64, n), make([]int64, n)
	txns, keys, clicks := make([]string, n), make([]string, n), make([]string, n)
	clickAt := make([]sql.NullString, n)
	for i, it := range items {
		programs[i], txns[i], customers[i] = it.sale.ProgramID, it.sale.TransactionID, it.customerID
		if it.sale.IsTest {
			continue
		}
		keys[i], clicks[i] = it.sale.CustomerKey, it.sale.ClickID
		if at, ok := ledger.ClickTime(it.sale.ClickID); ok {
			clickAt[i] = sql.NullString{String: timeText(at), Valid: true}
		}
	}
	rows, err := s.stmts.in(ctx, tx, qSaleSnapshots).QueryxContext(ctx, pq.Array(programs), pq.Array(txns),
		pq.Array(keys), pq.Array(clicks), pq.Array(clickAt), pq.Array(customers),
		ledger.EventSaleCreated, ledger.EventCommissionCreated)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	snaps := make([]*ledger.SaleSnapshot, n)
	for rows.Next() {
		var r snapshotRow
		if err := rows.StructScan(&r); err != nil {
			return nil, err
		}
		snaps[r.Ord-1] = r.snapshot(items[r.Ord-1].sale.ClickID)
	}
	return snaps, rows.Err()
}
