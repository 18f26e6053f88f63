package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// BrandLinkService implements ledger.BrandLinkService over the operator's
// link writes (insertLink, updateLinkActive).
type BrandLinkService struct{ db *DB }

// NewBrandLinkService returns the brand's link service over db.
func NewBrandLinkService(db *DB) *BrandLinkService { return &BrandLinkService{db: db} }

var _ ledger.BrandLinkService = (*BrandLinkService)(nil)

// CreateLink creates a link of a partner enrolled in the program and
// returns it as the listing shows it (no clicks yet).
func (s *BrandLinkService) CreateLink(ctx context.Context, programID, partnerID int64, code string, active bool) (bl *ledger.BrandLink, err error) {
	defer wrap(&err, "postgres.BrandCreateLink(%d, %q)", programID, code)
	if !ledger.ValidLinkCode(code) {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgLinkCode)
	}
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		l, err := insertLink(ctx, tx, programID, partnerID, code, active, now)
		if err != nil {
			return err
		}
		bl, err = brandLink(ctx, tx, programID, l.ID)
		return err
	})
	if err != nil {
		return nil, formatError(err)
	}
	return bl, nil
}

// SetLinkStatus turns a normal link of the program on or off.
func (s *BrandLinkService) SetLinkStatus(ctx context.Context, programID, linkID int64, active bool) (bl *ledger.BrandLink, err error) {
	defer wrap(&err, "postgres.SetLinkStatus(%d, %d)", programID, linkID)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if _, err := updateLinkActive(ctx, tx, linkID, &programID, active, now); err != nil {
			return err
		}
		bl, err = brandLink(ctx, tx, programID, linkID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return bl, nil
}

// ListLinks returns a page of the program's normal links, newest first,
// in one query: the page is cut from links first (links_program_id_idx or
// links_partner_id_idx), its size counted by a window over the matching
// links, and each row of the page then counts its clicks with an index
// scan per monthly partition on a clicks index that leads with program_id
// (clicks_program_partner_idx, or the listing's partial index of real
// clicks), filtered on partner and link. A page past the last one reads
// the total with a second query.
func (s *BrandLinkService) ListLinks(ctx context.Context, q ledger.BrandLinkQuery) (p *ledger.BrandLinkPage, err error) {
	defer wrap(&err, "postgres.ListLinks(%d)", q.ProgramID)
	where, args := linkFilters(q)
	args = append(args, q.PageSize, q.Offset())
	n := len(args)
	rows, err := s.db.QueryContext(ctx, `
		SELECT `+brandLinkColumns+`, l.total
		FROM (SELECT id, program_id, partner_id, code, active, created_at, updated_at, count(*) OVER () AS total
			FROM links WHERE `+where+`
			ORDER BY id DESC LIMIT $`+strconv.Itoa(n-1)+` OFFSET $`+strconv.Itoa(n)+`) l
		`+brandLinkJoins+`
		ORDER BY l.id DESC`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	p = &ledger.BrandLinkPage{Links: []ledger.BrandLink{}, Page: q.Page, PageSize: q.PageSize}
	for rows.Next() {
		var bl ledger.BrandLink
		if err := rows.Scan(append(brandLinkDest(&bl), &p.Total)...); err != nil {
			return nil, err
		}
		fixBrandLinkTimes(&bl)
		p.Links = append(p.Links, bl)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(p.Links) == 0 && q.Page > 1 {
		where, args := linkFilters(q)
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM links WHERE `+where, args...).Scan(&p.Total); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// linkFilters is the WHERE clause of the listing over links, and its
// arguments: the program's normal links, narrowed by the filters sent.
func linkFilters(q ledger.BrandLinkQuery) (string, []any) {
	where := []string{"program_id = $1", "NOT is_test"}
	args := []any{q.ProgramID}
	if q.PartnerID != nil {
		args = append(args, *q.PartnerID)
		where = append(where, "partner_id = $"+strconv.Itoa(len(args)))
	}
	if q.Active != nil {
		args = append(args, *q.Active)
		where = append(where, "active = $"+strconv.Itoa(len(args)))
	}
	return strings.Join(where, " AND "), args
}

// brandLinkColumns and brandLinkJoins read a brand link from a row source
// l with the links columns: the partner, the program's domain and the
// link's recorded clicks (test clicks left out).
const (
	brandLinkColumns = `l.id, l.program_id, l.partner_id, l.code, l.active, l.created_at, l.updated_at,
		COALESCE(pa.name, ''), COALESCE(pa.email, ''), pr.domain,
		(SELECT count(*) FROM clicks k
			WHERE k.program_id = l.program_id AND k.partner_id = l.partner_id AND k.link_id = l.id AND NOT k.is_test)`
	brandLinkJoins = `JOIN programs pr ON pr.id = l.program_id
		LEFT JOIN partners pa ON pa.id = l.partner_id`
)

func brandLinkDest(bl *ledger.BrandLink) []any {
	return []any{&bl.ID, &bl.ProgramID, &bl.PartnerID, &bl.Code, &bl.Active, &bl.CreatedAt, &bl.UpdatedAt,
		&bl.PartnerName, &bl.PartnerEmail, &bl.Domain, &bl.Clicks}
}

func fixBrandLinkTimes(bl *ledger.BrandLink) {
	bl.CreatedAt, bl.UpdatedAt = bl.CreatedAt.UTC(), bl.UpdatedAt.UTC()
}

// brandLink reads one normal link of the program as the listing shows it.
// Errors: ENotFound (link).
func brandLink(ctx context.Context, tx *sqlx.Tx, programID, linkID int64) (*ledger.BrandLink, error) {
	bl := &ledger.BrandLink{}
	err := tx.QueryRowContext(ctx, `
		SELECT `+brandLinkColumns+`
		FROM links l `+brandLinkJoins+`
		WHERE l.id = $1 AND l.program_id = $2 AND NOT l.is_test`, linkID, programID).Scan(brandLinkDest(bl)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("link")
	} else if err != nil {
		return nil, err
	}
	fixBrandLinkTimes(bl)
	return bl, nil
}
