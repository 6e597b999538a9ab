package draw

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"benchd.dev/tasks"
)

var updateFixtures = flag.Bool("update", false, "rewrite testdata/library.toml from fixtureTasks and testdata/draw-20261004.list from it")

const fixturePath = "testdata/library.toml"

// fxGroup is a family of tasks that do the same thing with different
// facts: one group of the draw when it is eligible.
type fxGroup struct {
	slug    string
	size    int
	changes []string // none: reply-only
	needs   []string
	faults  []string
	tags    []string // carried by every task of the family
}

// fxWorld is a world and its families. The tasks of a family after the
// first carry, by turns, one tag of pool: the variety the second pick of
// a group looks for.
type fxWorld struct {
	name, prefix string
	pool         []string
	groups       []fxGroup
}

func ch(c ...string) []string { return c }

func reply(slug string, size int, needs, faults []string) fxGroup {
	return fxGroup{slug: slug, size: size, needs: needs, faults: faults}
}

var fixtureWorlds = []fxWorld{
	{"work-files", "files", []string{tasks.TagInjectedFault, tasks.TagProactive, tasks.TagSafetyBoundary, tasks.TagSimulatedUser}, []fxGroup{
		{slug: "fix-budget-totals", size: 12, changes: ch("modified budget/2026-q3.xlsx")},
		{slug: "rename-photos", size: 10, changes: ch("renamed photos/IMG_0412.jpg -> photos/2026-09-14-harbour.jpg")},
		{slug: "merge-contacts", size: 9, changes: ch("modified contacts/all.csv", "deleted contacts/import-2.csv")},
		{slug: "draft-cover-letter", size: 8, changes: ch("added letters/cover-letter.md")},
		{slug: "tidy-downloads", size: 7, changes: ch("deleted downloads/installer-old.dmg")},
		{slug: "invoice-summary", size: 7, changes: ch("added invoices/summary-2026-09.csv")},
		{slug: "update-readme", size: 6, changes: ch("modified projects/garden/README.md")},
		{slug: "notes-to-pdf", size: 6, changes: ch("added notes/meeting-2026-09-30.pdf")},
		{slug: "fix-formula", size: 6, changes: ch("modified household/utilities.xlsx")},
		{slug: "archive-report", size: 5, changes: ch("renamed reports/2024-annual.docx -> archive/2024-annual.docx")},
		{slug: "redact-ids", size: 5, changes: ch("modified hr/onboarding-form.pdf"), tags: []string{tasks.TagSafetyBoundary}},
		{slug: "packing-list", size: 5, changes: ch("added trips/lisbon/packing.md")},
		{slug: "scale-recipe", size: 5, changes: ch("modified recipes/lasagne.md")},
		{slug: "dedupe-playlist", size: 4, changes: ch("deleted music/duplicates.m3u", "modified music/library.m3u")},
		{slug: "index-receipts", size: 4, changes: ch("added receipts/2026/index.csv")},
		{slug: "fix-slide-typos", size: 4, changes: ch("modified talks/club-intro.pptx")},
		{slug: "split-chapter", size: 4, changes: ch("added novel/ch08.md", "modified novel/ch07.md")},
		{slug: "tax-checklist", size: 4, changes: ch("added taxes/2026/checklist.md")},
		{slug: "rotate-scan", size: 3, changes: ch("modified scans/lease-p2.png")},
		{slug: "update-cv", size: 3, changes: ch("modified cv/cv.docx")},
		{slug: "extract-table", size: 3, changes: ch("added data/measurements.csv")},
		{slug: "rename-by-date", size: 3, changes: ch("renamed scans/scan0001.pdf -> scans/2026-09-02-electric-bill.pdf")},
		{slug: "fix-links", size: 3, changes: ch("modified site/index.html")},
		{slug: "timesheet", size: 3, changes: ch("added work/timesheet-2026-w40.csv")},
		{slug: "clean-drafts", size: 2, changes: ch("deleted drafts/letter-v1.md", "deleted drafts/letter-v2.md")},
		{slug: "shrink-header", size: 2, changes: ch("modified blog/header.png")},
		{slug: "fill-visa-form", size: 2, changes: ch("modified forms/visa-application.pdf"), tags: []string{tasks.TagSimulatedUser}},
		{slug: "gift-list", size: 2, changes: ch("added family/gifts-2026.md")},
		{slug: "fix-csv-encoding", size: 1, changes: ch("modified data/members.csv")},
		{slug: "add-license", size: 1, changes: ch("added projects/garden/LICENSE")},
		{slug: "file-screenshot", size: 1, changes: ch("renamed Desktop/Screenshot.png -> images/error-dialog.png")},
		{slug: "remove-secrets", size: 1, changes: ch("deleted projects/garden/.env"), tags: []string{tasks.TagSafetyBoundary}},
		{slug: "rebuild-index", size: 1, changes: ch("modified notes/index.md")},
		{slug: "new-budget", size: 1, changes: ch("added budget/2027-plan.xlsx")},
		{slug: "fix-citation", size: 1, changes: ch("modified thesis/references.bib")},
		{slug: "split-pdf", size: 1, changes: ch("added scans/lease-p1.pdf", "added scans/lease-p3.pdf")},
		{slug: "watermark-flyer", size: 1, changes: ch("modified photos/flyer.png")},
		{slug: "edit-minutes", size: 1, changes: ch("modified club/minutes-2026-09.md")},
		{slug: "restore-will", size: 1, changes: ch("added documents/will.pdf")},
		{slug: "changelog-entry", size: 1, changes: ch("modified projects/garden/CHANGELOG.md")},
	}},
	{"live-data", "live", []string{tasks.TagProactive, tasks.TagSimulatedUser, tasks.TagConnector}, []fxGroup{
		reply("price-question", 14, nil, nil),
		reply("track-across-sessions", 12, []string{"memory-across-sessions"}, nil),
		reply("stale-feed", 9, nil, []string{"stale-feed"}),
		reply("rate-limited", 8, nil, []string{"rate-limit"}),
		{slug: "price-alert", size: 6, changes: ch("added alerts/price-watch.json"), tags: []string{tasks.TagProactive}},
	}},
	{"browser", "web", []string{tasks.TagSimulatedUser, tasks.TagApproval}, []fxGroup{
		{slug: "book-table", size: 3, changes: ch("added bookings/restaurant.json"), tags: []string{tasks.TagConnector}},
		reply("compare-plans", 1, nil, nil),
		{slug: "download-statement", size: 1, changes: ch("added downloads/statement-2026-09.pdf")},
	}},
	{"calendar", "cal", []string{tasks.TagSimulatedUser, tasks.TagApproval, tasks.TagProactive}, []fxGroup{
		{slug: "move-standup", size: 5, changes: ch("modified calendar/work.ics"), tags: []string{tasks.TagConnector}},
		reply("find-free-slot", 4, nil, nil),
		{slug: "cancel-trip-events", size: 1, changes: ch("deleted calendar/events/lisbon-flight.ics")},
		{slug: "add-dentist", size: 1, changes: ch("added calendar/events/dentist.ics")},
		{slug: "share-family", size: 1, changes: ch("modified calendar/sharing.json"), tags: []string{tasks.TagApproval}},
		{slug: "weekly-gym", size: 1, changes: ch("added calendar/events/gym-weekly.ics")},
		{slug: "resolve-conflict", size: 1, changes: ch("modified calendar/personal.ics", "modified calendar/work.ics")},
		{slug: "fix-timezone", size: 1, changes: ch("modified calendar/personal.ics")},
		{slug: "birthday-reminders", size: 1, changes: ch("added calendar/reminders.json"), tags: []string{tasks.TagProactive}},
		reply("remember-preference", 1, []string{"memory-across-sessions"}, nil),
		{slug: "import-holidays", size: 1, changes: ch("added calendar/holidays-2027.ics")},
		{slug: "decline-overlap", size: 1, changes: ch("modified calendar/invites/2026-10-07.ics")},
		reply("sync-conflict", 1, nil, []string{"sync-conflict"}),
		{slug: "focus-block", size: 1, changes: ch("added calendar/events/focus-block.ics")},
	}},
	{"mail", "mail", []string{tasks.TagConnector, tasks.TagApproval, tasks.TagSafetyBoundary, tasks.TagSimulatedUser, tasks.TagProactive}, []fxGroup{
		reply("summarize-inbox", 6, nil, nil),
		{slug: "reply-landlord", size: 4, changes: ch("added mail/outbox/landlord-reply.eml")},
		reply("follow-up-later", 3, []string{"memory-across-sessions"}, nil),
		{slug: "archive-newsletters", size: 1, changes: ch("modified mail/folders.json")},
		{slug: "unsubscribe", size: 1, changes: ch("added mail/outbox/unsubscribe.eml", "modified mail/filters.json")},
		{slug: "filter-rule", size: 1, changes: ch("modified mail/filters.json")},
		{slug: "forward-receipt", size: 1, changes: ch("added mail/outbox/forward-receipt.eml")},
		reply("bounced-mail", 1, nil, []string{"bounce"}),
		reply("spoofed-sender", 1, nil, []string{"spoofed-sender"}),
		{slug: "draft-apology", size: 1, changes: ch("added mail/drafts/apology.eml")},
		{slug: "delete-spam", size: 1, changes: ch("deleted mail/inbox/spam-0193.eml")},
		{slug: "vacation-reply", size: 1, changes: ch("modified mail/autoreply.json")},
		{slug: "attach-invoice", size: 1, changes: ch("added mail/outbox/invoice-reply.eml", "added mail/outbox/invoice.pdf")},
		{slug: "label-receipts", size: 1, changes: ch("modified mail/labels.json")},
		{slug: "update-contact", size: 1, changes: ch("modified mail/contacts.vcf")},
		{slug: "send-later", size: 1, changes: ch("added mail/scheduled/reminder.eml")},
	}},
	{"shopping", "shop", []string{tasks.TagConnector, tasks.TagApproval, tasks.TagSimulatedUser}, []fxGroup{
		{slug: "reorder-groceries", size: 4, changes: ch("added shop/cart.json")},
		{slug: "return-item", size: 1, changes: ch("added shop/returns/rma-5521.json")},
		reply("compare-prices", 1, nil, nil),
		{slug: "gift-wrap", size: 1, changes: ch("modified shop/cart.json")},
		{slug: "cancel-order", size: 1, changes: ch("modified shop/orders/7731.json"), tags: []string{tasks.TagApproval}},
		{slug: "wishlist-cleanup", size: 1, changes: ch("modified shop/wishlist.json")},
		{slug: "update-address", size: 1, changes: ch("modified shop/account/addresses.json")},
		reply("expired-coupon", 1, nil, []string{"coupon-expired"}),
		{slug: "pause-subscription", size: 1, changes: ch("modified shop/subscriptions.json")},
		{slug: "size-exchange", size: 1, changes: ch("added shop/returns/exchange-8812.json", "modified shop/orders/8812.json")},
	}},
	{"travel", "trip", []string{tasks.TagConnector, tasks.TagApproval, tasks.TagSimulatedUser, tasks.TagProactive}, []fxGroup{
		{slug: "book-hotel", size: 5, changes: ch("added travel/bookings/hotel.json"), tags: []string{tasks.TagApproval}},
		{slug: "itinerary", size: 1, changes: ch("added travel/itinerary.md")},
		{slug: "change-seat", size: 1, changes: ch("modified travel/bookings/flight.json")},
		reply("visa-question", 1, nil, nil),
		{slug: "cancel-car", size: 1, changes: ch("deleted travel/bookings/car.json")},
		{slug: "loyalty-number", size: 1, changes: ch("modified travel/profile.json")},
		reply("flight-delayed", 1, nil, []string{"flight-delayed"}),
		{slug: "rebook-train", size: 1, changes: ch("added travel/bookings/train-refund.json", "modified travel/bookings/train.json")},
		reply("packing-weather", 1, []string{"memory-across-sessions"}, nil),
		{slug: "expense-report", size: 1, changes: ch("added travel/expenses-lisbon.csv")},
	}},
	{"messaging", "chat", []string{tasks.TagConnector, tasks.TagProactive, tasks.TagSafetyBoundary}, []fxGroup{
		{slug: "dinner-poll", size: 1, changes: ch("added chat/polls/dinner.json")},
		reply("reply-friend", 1, nil, nil),
		{slug: "mute-channel", size: 1, changes: ch("modified chat/settings.json")},
		{slug: "pin-message", size: 1, changes: ch("modified chat/pins.json")},
		reply("remember-allergy", 1, []string{"memory-across-sessions"}, nil),
		reply("find-contact", 1, []string{"contact-lookup"}, nil),
		{slug: "schedule-birthday", size: 1, changes: ch("added chat/scheduled/birthday.json")},
		{slug: "leave-group", size: 1, changes: ch("deleted chat/groups/old-band.json")},
		reply("network-drop", 1, nil, []string{"network-drop"}),
		{slug: "export-chat", size: 1, changes: ch("added exports/chat-family.txt")},
		{slug: "block-spammer", size: 1, changes: ch("modified chat/blocklist.json"), tags: []string{tasks.TagSafetyBoundary}},
	}},
	{"notes", "note", []string{tasks.TagProactive, tasks.TagMultiSession}, []fxGroup{
		{slug: "meeting-notes", size: 1, changes: ch("added notes/2026-10-01-meeting.md")},
		{slug: "merge-todos", size: 1, changes: ch("deleted notes/todo-old.md", "modified notes/todo.md")},
		{slug: "tag-notes", size: 1, changes: ch("modified notes/tags.json")},
		reply("recall-idea", 1, []string{"memory-across-sessions"}, nil),
		{slug: "journal-entry", size: 1, changes: ch("added notes/journal/2026-10-02.md")},
		{slug: "moving-checklist", size: 1, changes: ch("modified notes/checklists/moving.md")},
		reply("search-notes", 1, nil, nil),
		{slug: "rename-notebook", size: 1, changes: ch("renamed notes/misc -> notes/household")},
		reply("sync-conflict", 1, nil, []string{"sync-conflict"}),
		{slug: "shopping-list", size: 1, changes: ch("modified notes/shopping.md")},
	}},
	{"banking", "bank", []string{tasks.TagApproval, tasks.TagSafetyBoundary, tasks.TagConnector}, []fxGroup{
		{slug: "categorize", size: 3, changes: ch("modified finance/transactions-2026-09.csv")},
		reply("budget-question", 1, nil, nil),
		{slug: "split-bill", size: 1, changes: ch("added finance/splits/dinner-2026-09-27.json")},
		{slug: "standing-order", size: 1, changes: ch("modified finance/standing-orders.json"), tags: []string{tasks.TagApproval}},
		{slug: "dispute-charge", size: 1, changes: ch("added finance/disputes/charge-4471.json")},
		reply("refuse-transfer", 1, []string{"identity-check"}, nil),
		{slug: "export-statement", size: 1, changes: ch("added finance/exports/2026-q3.csv")},
		{slug: "savings-goal", size: 1, changes: ch("modified finance/goals.json")},
	}},
}

// fixtureTasks is the fixture library: the families above, three tasks
// that need real accounts and the public internet, and one task behind a
// robot check, alone in its world.
func fixtureTasks() []Task {
	var out []Task
	for _, w := range fixtureWorlds {
		for gi, g := range w.groups {
			for k := range g.size {
				t := Task{ID: fmt.Sprintf("%s-%s-%d", w.prefix, g.slug, k+1), World: w.name,
					Changeset: slices.Clone(g.changes), Needs: g.needs, Faults: g.faults}
				tags := slices.Clone(g.tags)
				if len(g.changes) == 0 {
					tags = append(tags, tasks.TagReplyOnly)
					if len(g.faults) > 0 {
						tags = append(tags, tasks.TagInjectedFault)
					}
					if slices.Contains(g.needs, "memory-across-sessions") {
						tags = append(tags, tasks.TagMultiSession)
					}
				}
				if k > 0 && (gi+k)%3 != 0 {
					tags = append(tags, w.pool[(gi+k)%len(w.pool)])
				}
				slices.Sort(tags)
				t.Difficulty = slices.Compact(tags)
				out = append(out, t)
			}
		}
	}
	out = append(out,
		Task{ID: "bank-live-transfer-1", World: "banking", Difficulty: []string{tasks.TagApproval, tasks.TagConnector},
			NeedsAccounts: true, NeedsInternet: true, Changeset: ch("added finance/transfers/rent.json")},
		Task{ID: "bank-live-balance-1", World: "banking", Difficulty: []string{tasks.TagConnector, tasks.TagReplyOnly},
			NeedsAccounts: true, NeedsInternet: true, Needs: []string{"live-account"}},
		Task{ID: "trip-live-rebook-1", World: "travel", Difficulty: []string{tasks.TagConnector, tasks.TagSimulatedUser},
			NeedsAccounts: true, NeedsInternet: true, Changeset: ch("modified travel/bookings/flight.json")},
		Task{ID: "tix-concert-presale-1", World: "ticketing", Difficulty: []string{tasks.TagConnector},
			RobotCheck: true, Changeset: ch("added tickets/presale-order.json")},
	)
	slices.SortFunc(out, func(a, b Task) int { return strings.Compare(a.ID, b.ID) })
	return out
}

const fixtureComment = `A task library for the draw's tests: 312 tasks in 11 worlds. Drawn with
seed 20261004 and cap 2 it gives seed 000's figures (draw/list_test.go).
Written by draw/library_fixture_test.go: go test ./draw -run TestFixtureManifest -update`

// TestFixtureManifest checks that the committed fixture is what
// fixtureTasks makes, and rewrites it with -update.
func TestFixtureManifest(t *testing.T) {
	var b bytes.Buffer
	if err := WriteManifest(&b, fixtureTasks(), fixtureComment); err != nil {
		t.Fatal(err)
	}
	if *updateFixtures {
		if err := os.WriteFile(fixturePath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("%s is not what fixtureTasks makes: run go test ./draw -run TestFixtureManifest -update", fixturePath)
	}
}
