package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// newCommissionCommand: reading, approving and paying out commissions.
func (o *operator) newCommissionCommand() *cobra.Command {
	return o.noun("commission", "Read, approve and mark commissions paid",
		idCommand(o, "get COMMISSION_ID", "Print a commission", "commission",
			commissionTable, (*apiclient.Client).GetCommission),
		idCommand(o, "approve COMMISSION_ID", "Approve a pending commission: it is credited to the partner's balance", "commission",
			commissionTable, (*apiclient.Client).ApproveCommission),
		idCommand(o, "mark-paid COMMISSION_ID", "Mark an approved commission paid out", "commission",
			commissionTable, (*apiclient.Client).MarkCommissionPaid),
	)
}

func commissionTable(w io.Writer, c apiclient.OpCommission) {
	row(w, "commission", c.Id)
	row(w, "status", string(c.Status))
	row(w, "amount", c.Amount.String()+" "+string(c.Currency))
	row(w, "program", c.ProgramId)
	row(w, "partner", c.PartnerId)
	row(w, "transaction", c.TransactionId)
	row(w, "credited", c.Credited)
	row(w, "approve after", c.ApproveAfter)
	row(w, "approved", c.ApprovedAt)
	row(w, "paid", c.PaidAt)
	row(w, "withdrawal", c.WithdrawalId)
	row(w, "reason", c.Reason)
}
