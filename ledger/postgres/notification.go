package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/partnertrack/partnertrack/ledger"
)

// NotificationStore implements ledger.NotificationStore over the
// notifications table.
type NotificationStore struct{ db *DB }

// NewNotificationStore returns the in-app notification store over db.
func NewNotificationStore(db *DB) *NotificationStore { return &NotificationStore{db: db} }

var _ ledger.NotificationStore = (*NotificationStore)(nil)

// SaveNotification stores a notification once per outbox id.
func (s *NotificationStore) SaveNotification(ctx context.Context, outboxID int64, n ledger.Notification) (created bool, err error) {
	defer wrap(&err, "postgres.SaveNotification(outbox %d)", outboxID)
	data := n.Data
	if data == nil {
		data = map[string]any{}
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, `
		INSERT INTO notifications (outbox_id, partner_id, workspace_id, kind, title, body, data, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)
		ON CONFLICT ON CONSTRAINT notifications_outbox_id_key DO NOTHING`,
		outboxID, n.PartnerID, n.WorkspaceID, n.Kind, n.Title, n.Body, string(raw), s.db.now())
	if err != nil {
		return false, err
	}
	rows, err := res.RowsAffected()
	return rows == 1, err
}

// PartnerNotifications returns a partner's notifications, newest first.
func (s *NotificationStore) PartnerNotifications(ctx context.Context, partnerID int64, limit int) (out []ledger.StoredNotification, err error) {
	defer wrap(&err, "postgres.PartnerNotifications(%d)", partnerID)
	if err := partnerExists(ctx, s.db, partnerID); err != nil {
		return nil, err
	}
	return s.list(ctx, `
		SELECT id, outbox_id, partner_id, workspace_id, kind, title, body, data, created_at, read_at
		FROM notifications WHERE partner_id = $1 ORDER BY id DESC LIMIT $2`, partnerID, limit)
}

// ProgramNotifications returns the notifications to a program's workspace
// that are about the program, newest first.
func (s *NotificationStore) ProgramNotifications(ctx context.Context, programID int64, limit int) (out []ledger.StoredNotification, err error) {
	defer wrap(&err, "postgres.ProgramNotifications(%d)", programID)
	var workspaceID int64
	if err := s.db.QueryRowContext(ctx, `SELECT workspace_id FROM programs WHERE id = $1`, programID).Scan(&workspaceID); errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("program")
	} else if err != nil {
		return nil, err
	}
	return s.list(ctx, `
		SELECT id, outbox_id, partner_id, workspace_id, kind, title, body, data, created_at, read_at
		FROM notifications WHERE workspace_id = $1 AND data->>'program_id' = $2::text
		ORDER BY id DESC LIMIT $3`, workspaceID, strconv.FormatInt(programID, 10), limit)
}

func (s *NotificationStore) list(ctx context.Context, query string, args ...any) ([]ledger.StoredNotification, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ledger.StoredNotification{}
	for rows.Next() {
		var n ledger.StoredNotification
		var data []byte
		if err := rows.Scan(&n.ID, &n.OutboxID, &n.PartnerID, &n.WorkspaceID, &n.Kind, &n.Title, &n.Body, &data, &n.CreatedAt, &n.ReadAt); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &n.Data); err != nil {
			return nil, err
		}
		n.CreatedAt = n.CreatedAt.UTC()
		out = append(out, n)
	}
	return out, rows.Err()
}
