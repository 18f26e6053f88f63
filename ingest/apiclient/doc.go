// Package apiclient is the Go client of the partnertrack API, generated
// from its OpenAPI document (ingest/apidoc/openapi.yaml) by oapi-codegen:
// one method per operation, named by its operationId, with the
// document's request and answer types. Regenerate it with
// `go generate ./ingest/apiclient` after changing the document.
//
// A brand's backend reports a sale, then a partial refund of it:
//
//	client, err := apiclient.NewClientWithResponses("https://track.example.com",
//		apiclient.WithRequestEditorFn(apiclient.Bearer(os.Getenv("PARTNERTRACK_API_KEY"))))
//	if err != nil {
//		return err
//	}
//	sale, err := client.TrackSaleWithResponse(ctx, apiclient.TrackSaleJSONRequestBody{
//		TransactionId: apiclient.Ptr("inv_1001"),
//		AmountCents:   apiclient.Ptr(4900), // 49.00 in the smallest unit
//		CustomerKey:   apiclient.Ptr("user_42"),
//	})
//	if err != nil {
//		return err // not sent, or an answer the document does not describe
//	}
//	if err := apiclient.CheckResponse(sale.HTTPResponse, sale.Body); err != nil {
//		return err // *apiclient.ResponseError: 409 duplicate_transaction means it is already recorded
//	}
//	refund, err := client.TrackRefundWithResponse(ctx, apiclient.TrackRefundRequest{
//		TransactionId:     "inv_1001",
//		RefundAmountCents: apiclient.Ptr(1900),
//		RefundId:          apiclient.Ptr("re_77"), // a retry with the same id applies nothing twice
//	})
//	if err == nil {
//		err = apiclient.CheckResponse(refund.HTTPResponse, refund.Body)
//	}
//
// Errors of every envelope (platform, typed, rate limit) read the same way
// through CheckResponse; money in answers is a json.Number in major units,
// exact as sent.
package apiclient
