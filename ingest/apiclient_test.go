package ingest

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
	"github.com/partnertrack/partnertrack/ingest/apidoc/apitest"
)

// TestGeneratedClientReportsSaleAndRefund runs the apiclient package
// doc's example against a real listener: a sale, a partial refund, and a
// duplicate read through CheckResponse.
func TestGeneratedClientReportsSaleAndRefund(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	click := mustClick(t, b, w.programID, w.linkID, w.partnerID)
	base := "http://" + serveOnPort(t, b.app)
	ctx := context.Background()

	client, err := apiclient.NewClientWithResponses(base,
		apiclient.WithHTTPClient(&http.Client{Transport: apitest.Default(t).Transport(t, nil)}),
		apiclient.WithRequestEditorFn(apiclient.Bearer(w.liveKey)))
	if err != nil {
		t.Fatal(err)
	}
	body := apiclient.TrackSaleJSONRequestBody{
		TransactionId: apiclient.Ptr("inv_1001"),
		AmountCents:   apiclient.Ptr(4900),
		ClickId:       apiclient.Ptr(click),
	}
	sale, err := client.TrackSaleWithResponse(ctx, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := apiclient.CheckResponse(sale.HTTPResponse, sale.Body); err != nil {
		t.Fatal(err)
	}
	recorded, err := sale.JSON200.AsTrackSaleRecorded()
	if err != nil || recorded.SaleId == 0 || recorded.CommissionId == nil {
		t.Fatalf("sale: %+v %v (%s)", recorded, err, sale.Body)
	}

	refund, err := client.TrackRefundWithResponse(ctx, apiclient.TrackRefundRequest{
		TransactionId:     "inv_1001",
		RefundAmountCents: apiclient.Ptr(1900),
		RefundId:          apiclient.Ptr("re_77"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := apiclient.CheckResponse(refund.HTTPResponse, refund.Body); err != nil {
		t.Fatal(err)
	}
	applied, err := refund.JSON200.AsTrackRefundApplied()
	// 30 % of 19.00 comes off the commission.
	if err != nil || applied.CommissionId != *recorded.CommissionId || applied.DeductionAmount != "5.7" {
		t.Fatalf("refund: %+v %v (%s)", applied, err, refund.Body)
	}

	again, err := client.TrackSaleWithResponse(ctx, body)
	if err != nil {
		t.Fatal(err)
	}
	var re *apiclient.ResponseError
	if err := apiclient.CheckResponse(again.HTTPResponse, again.Body); !errors.As(err, &re) ||
		re.Status != 409 || re.Code != "duplicate_transaction" || re.RequestID == "" {
		t.Fatalf("duplicate: %v (%s)", err, again.Body)
	}
}
