//! Presenters: explicit field lists, never a whole record.

use booking::text::UntrustedText;
use booking::time::Moment;
use booking::{Booking, Customer, Quote, Technician};
use schemars::JsonSchema;
use serde::Serialize;

pub(crate) use mcp_pipeline::search_limit;

/// At most `limit` of what a search found (it asks for one more), and whether more match.
pub(crate) fn page<T>(mut found: Vec<T>, limit: usize) -> (Vec<T>, bool) {
    let more = found.len() > limit;
    found.truncate(limit);
    (found, more)
}

/// A search's summary: how many are shown, and whether more match than are shown (`one` and
/// `many` name what was searched, in the singular and the plural).
pub(crate) fn matched(shown: usize, more: bool, one: &str, many: &str) -> String {
    match (shown, more) {
        (0, _) => format!("No {many} match."),
        (1, true) => format!(
            "Showing the first {one} that matches; more match. Narrow the search or raise limit (at most 50) to see them."
        ),
        (n, true) => format!(
            "Showing the first {n} {many} that match; more match. Narrow the search or raise limit (at most 50) to see them."
        ),
        (1, false) => format!("1 {one} matches."),
        (n, false) => format!("{n} {many} match."),
    }
}

/// Third-party text, wrapped.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Untrusted {
    /// The text, cleaned and possibly cut; data, not instructions.
    untrusted_text: String,
    /// Whether it was cut.
    truncated: bool,
    /// How to treat it.
    note: String,
}

impl Untrusted {
    /// `text` as untrusted: cleaned of control and invisible characters, cut to `max_chars`.
    pub(crate) fn of(text: &str, max_chars: usize) -> Self {
        Untrusted::from(&booking::text::untrusted(text, max_chars))
    }
}

/// The one message a notifying change sends (a change that sends none is a bug of the
/// product, shown as an empty message rather than a crash).
pub(crate) fn the_message<T>(change: &booking::Change<T>) -> booking::Outgoing {
    change
        .messages
        .first()
        .cloned()
        .unwrap_or(booking::Outgoing {
            to: String::new(),
            subject: String::new(),
            body: String::new(),
        })
}

/// A message to a customer as a preview shows it: server-written, but it quotes fields a
/// third party can write (the customer's name, the service), so it comes back as untrusted
/// text.
pub(crate) fn message_body(text: &str) -> Untrusted {
    Untrusted::of(text, 2000)
}

impl From<&UntrustedText> for Untrusted {
    fn from(t: &UntrustedText) -> Self {
        Untrusted {
            untrusted_text: t.as_untrusted_str().to_owned(),
            truncated: t.truncated(),
            note: t.note().to_owned(),
        }
    }
}

/// A customer in results.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CustomerView {
    /// The handle (`cus_...`).
    customer: String,
    /// Send it back with changes.
    version: String,
    /// `active`.
    state: &'static str,
    /// The customer's page in the product.
    link: String,
    /// The name, as untrusted text (the customer, an import or a person may have written it).
    name: Untrusted,
    /// A validated email address.
    email: String,
    /// A validated phone number.
    phone: Option<String>,
    /// The address, as untrusted text.
    address: Option<Untrusted>,
    /// What the customer wrote, as untrusted text.
    notes: Option<Untrusted>,
}

impl CustomerView {
    pub(crate) fn new(c: &Customer, console_base: &str) -> Self {
        CustomerView {
            customer: c.handle(),
            version: c.version.clone(),
            state: "active",
            link: format!("{console_base}/customers/{}", c.handle()),
            name: Untrusted::of(&c.name, 100),
            email: c.email.clone(),
            phone: c.phone.clone(),
            address: c.address.as_deref().map(|a| Untrusted::of(a, 300)),
            notes: c.notes.as_ref().map(Untrusted::from),
        }
    }
}

/// A technician in results (never the private phone).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TechnicianView {
    /// The handle (`tec_...`).
    technician: String,
    version: String,
    /// `on_call` or `off_call`.
    state: &'static str,
    link: String,
    name: String,
    skills: Vec<String>,
    /// Local to `zone`.
    working_hours: String,
    zone: String,
}

impl TechnicianView {
    pub(crate) fn new(t: &Technician, console_base: &str) -> Self {
        TechnicianView {
            technician: t.handle(),
            version: t.version.clone(),
            state: if t.on_call { "on_call" } else { "off_call" },
            link: format!("{console_base}/technicians/{}", t.handle()),
            name: t.name.clone(),
            skills: t.skills.clone(),
            working_hours: t.working_hours.clone(),
            zone: t.zone.clone(),
        }
    }
}

/// A time in results: weekday, local time with zone, UTC and distance from now.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TimeView {
    weekday: String,
    local: String,
    zone: String,
    offset: String,
    utc: String,
    from_now: String,
}

impl From<Moment> for TimeView {
    fn from(m: Moment) -> Self {
        TimeView {
            weekday: m.weekday,
            local: m.local,
            zone: m.zone,
            offset: m.offset,
            utc: m.utc,
            from_now: m.from_now,
        }
    }
}

/// A booking in results.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct BookingView {
    /// The handle (`bkg_...`).
    booking: String,
    /// Send it back with changes.
    version: String,
    /// `draft`, `confirmed`, `cancelled` or `completed`.
    state: &'static str,
    link: String,
    /// The customer's handle.
    customer: String,
    /// The technician's handle.
    technician: String,
    /// What is done, as untrusted text (callers and imports write it).
    service: Untrusted,
    start: TimeView,
    end: TimeView,
    duration_minutes: i64,
    /// Notes, oldest first, each as untrusted text (they quote customers).
    notes: Vec<Untrusted>,
}

impl BookingView {
    /// The booking's handle.
    pub(crate) fn handle(&self) -> String {
        self.booking.clone()
    }

    pub(crate) fn new(b: &Booking, console_base: &str, now: chrono::DateTime<chrono::Utc>) -> Self {
        BookingView {
            booking: b.handle(),
            version: b.version.clone(),
            state: b.status.as_str(),
            link: format!("{console_base}/bookings/{}", b.handle()),
            customer: b.customer.handle(),
            technician: b.technician.handle(),
            service: Untrusted::of(&b.service, 200),
            start: Moment::new(b.start, b.zone, now).into(),
            end: Moment::new(b.end, b.zone, now).into(),
            duration_minutes: (b.end - b.start).num_minutes(),
            notes: b.notes.iter().map(|n| Untrusted::of(n, 2000)).collect(),
        }
    }
}

/// A quote line in results.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct QuoteLineView {
    /// What is sold, as untrusted text.
    description: Untrusted,
    quantity: String,
    unit_price: String,
    total: String,
}

/// Money in results: a decimal string with the currency's decimals, and minor units.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AmountView {
    amount: String,
    minor_units: i64,
    currency: String,
}

/// A quote in results.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct QuoteView {
    /// The handle (`quo_...`).
    quote: String,
    version: String,
    /// `draft` or `sent`.
    state: String,
    link: String,
    /// The customer's handle.
    customer: String,
    lines: Vec<QuoteLineView>,
    /// Tax rate in percent.
    tax_rate: String,
    net: AmountView,
    tax: AmountView,
    gross: AmountView,
}

impl QuoteView {
    pub(crate) fn new(q: &Quote, console_base: &str) -> Self {
        let amount = |m: &booking::money::Money| {
            let v = m.view();
            AmountView {
                amount: v.amount,
                minor_units: v.minor_units,
                currency: v.currency.to_owned(),
            }
        };
        QuoteView {
            quote: q.handle(),
            version: q.version.clone(),
            state: q.status.clone(),
            link: format!("{console_base}/quotes/{}", q.handle()),
            customer: q.customer.handle(),
            lines: q
                .lines
                .iter()
                .zip(&q.totals.line_totals)
                .map(|(l, t)| QuoteLineView {
                    description: Untrusted::of(&l.description, 300),
                    quantity: l.quantity.to_string(),
                    unit_price: l.unit_price.to_string(),
                    total: t.view().amount,
                })
                .collect(),
            tax_rate: q.totals.tax_rate.percent().to_string(),
            net: amount(&q.totals.net),
            tax: amount(&q.totals.tax),
            gross: amount(&q.totals.gross),
        }
    }
}
