package ledger

import (
	"strings"
	"unicode/utf8"
)

// Why a processor payment is not recorded, before attribution.
const MsgPaymentTransactionID = "the payment's id is not a transaction id of 1 to 255 characters"

// MsgPaymentOtherProgram is the skip reason of a payment whose metadata
// names another program than the webhook's.
func MsgPaymentOtherProgram(programID string) string {
	return "metadata program_id " + programID + " names another program"
}

// PaymentPayable checks what a payment event of program programID needs
// before it is attributed: metadata that names no other program and, for
// a sale, a supported currency and a transaction id of 1 to 255
// characters. It returns the sale's currency, or the reason the event is
// skipped.
func PaymentPayable(ev *PaymentEvent, keys MetadataKeys, programID int64) (Currency, string) {
	if h := keys.Hints(ev.Metadata); h.OtherProgram(programID) {
		return "", MsgPaymentOtherProgram(h.ProgramID)
	}
	if ev.Action != ActionSale {
		return "", ""
	}
	code := strings.ToUpper(strings.TrimSpace(ev.Currency))
	cur, ok := ParseCurrency(code)
	if !ok {
		return "", MsgUnsupportedCurrency(code)
	}
	if utf8.RuneCountInString(ev.TransactionID) > 255 || ev.TransactionID == "" {
		return "", MsgPaymentTransactionID
	}
	return cur, ""
}

// CommissionPayable refuses to approve or pay a commission that a refund
// reversed, or cancelled before it was credited, or that the brand
// rejected.
func CommissionPayable(c *Commission) error {
	switch {
	case c.Status == CommissionReversed:
		return NewError(EConflict, MsgCommissionReversed)
	case c.Status == CommissionRejected:
		return NewError(EConflict, MsgCommissionRejected)
	case c.Status == CommissionRefunded && !c.Credited:
		return NewError(EConflict, MsgCommissionCancelled)
	}
	return nil
}
