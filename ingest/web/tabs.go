package web

// tab is one entry of a tab bar: its key, path under the area and label.
type tab struct{ Key, Path, Label string }

// programTabs are a brand program's pages, under /app/programs/:id/.
var programTabs = []tab{
	{"overview", "", "Overview"},
	{"partners", "partners", "Partners"},
	{"links", "links", "Links"},
	{"commissions", "commissions", "Commissions"},
	{"payouts", "payouts", "Payouts"},
	{"events", "events", "Events"},
	{"settings", "settings", "Settings"},
}

// partnerTabs are the partner's pages, under /partner/.
var partnerTabs = []tab{
	{"programs", "", "Programs"},
	{"commissions", "commissions", "Commissions"},
	{"payouts", "payouts", "Payouts"},
	{"notifications", "notifications", "Notifications"},
}
