package ledger

import "time"

// Funnel statuses of a customer: click, then lead, then conversion (a
// paying customer). A customer never moves back.
const (
	FunnelClick      = "click"
	FunnelLead       = "lead"
	FunnelConversion = "conversion"
)

// FunnelRank orders the funnel statuses.
func FunnelRank(status string) int {
	switch status {
	case FunnelClick:
		return 1
	case FunnelLead:
		return 2
	case FunnelConversion:
		return 3
	}
	return 0
}

// Customer is a visitor a partner brought to a program, attributed through
// a click. CustomerKey is saved only when a lead settles.
type Customer struct {
	ID                  int64
	ProgramID           int64
	PartnerID           *int64
	LinkID              *int64
	ClickID             string
	CustomerKey         string
	Email               string
	Status              string
	ProcessorCustomerID string
	FirstPaidAt         *time.Time
	IsTest              bool
	CreatedAt           time.Time
}
