package tasks

import (
	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
)

// Task types of the commission ledger.
const (
	// TypeNotificationDeliver is an in-app notification relayed from the
	// outbox to the notifications queue; its payload is an OutboxPayload
	// whose data is a ledger.Notification.
	TypeNotificationDeliver = ledger.OutboxTaskNotification
	// TypeCommissionsApprove is the periodic approval of commissions whose
	// hold has ended, on the maintenance queue.
	TypeCommissionsApprove = "commissions:approve"
)

// NewCommissionsApproveTask builds the periodic commission approval.
func NewCommissionsApproveTask() *asynq.Task { return asynq.NewTask(TypeCommissionsApprove, nil) }
