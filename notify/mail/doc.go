// Package mail sends the service's emails. A Mailer sends one rendered
// Message: the SMTP implementation (go-mail) when SMTP_URL is set, the log
// implementation, which logs and sends nothing, when it is not. Render
// turns an email kind and its data (ledger.EmailData) into the subject,
// text and HTML parts from the embedded templates: text/template for the
// text part, html/template (which escapes the data) for the HTML part.
//
// Emails are written to the transactional outbox by the ledger
// (ledger.EmailOutboxMessage) and sent by the emails worker, which uses
// the outbox id as the Message-ID so that a retried send is recognisable.
package mail
