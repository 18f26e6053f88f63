// Package web serves the dashboard's HTML pages: sign-in for browsers (the
// OIDC authorization-code flow with PKCE), brand pages under /app/ and
// partner pages under /partner/. Pages are server-rendered html/template
// views with a strict, per-response nonce Content-Security-Policy, and
// forms that work without JavaScript.
//
// Every page reads and changes data through the edge's own JSON API, in
// process, with the generated client (ingest/apiclient) and the signed-in
// person's bearer token: the dashboard can do nothing the API cannot, and
// it shows the API's validation messages as they are.
package web
