package ledger

// Stripe event types the service acts on. Any other type is stored and
// skipped. They are spelled out here, not taken from stripe-go, so that
// the domain does not import the Stripe SDK; ledger/stripe checks that
// they match it.
const (
	StripeCheckoutCompleted  = "checkout.session.completed"
	StripeCheckoutAsyncPaid  = "checkout.session.async_payment_succeeded"
	StripeInvoicePaid        = "invoice.paid"
	StripeInvoicePaymentOK   = "invoice.payment_succeeded"
	StripeInvoicePaymentPaid = "invoice_payment.paid"
	StripeChargeRefunded     = "charge.refunded"
)

// Why a Stripe event of a handled type asks for nothing.
const (
	SkipUnhandledType      = "event type not handled"
	SkipUnpaidCheckout     = "checkout not paid yet: the sale is recorded from checkout.session.async_payment_succeeded"
	SkipCheckoutMode       = "checkout in setup mode: no payment"
	SkipNothingPaid        = "nothing was paid"
	SkipNotSubscription    = "invoice of no subscription: one-time payments are recorded from checkout.session.completed"
	SkipInvoicePaymentOpen = "invoice payment not paid"
	SkipNoRefund           = "charge has no refunded amount"
	SkipAboveCeiling       = "amount above the ceiling of 1000000000000 minor units: not recorded"
)
