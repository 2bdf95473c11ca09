//! The booking product's record kinds (ADR 49): customers, technicians, bookings and quotes,
//! with the typed attributes their pages show. Each is read through the same service as the
//! tools, with the reader's live rights.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcp_pipeline::records::{
    Attribute, AttributeType as T, AttributeValue as V, Reader, Record, RecordError, RecordKind,
    Records,
};

const CUSTOMER: RecordKind = RecordKind {
    prefix: "cus",
    noun: "customer",
    path: "customers",
    attributes: &[
        Attribute::new("name", "Name", T::String),
        Attribute::new("email", "Email", T::String),
        Attribute::new("phone", "Phone", T::String),
        Attribute::new("address", "Address", T::String),
        Attribute::new("notes", "Notes", T::String).third_party(),
    ],
};

const TECHNICIAN: RecordKind = RecordKind {
    prefix: "tec",
    noun: "technician",
    path: "technicians",
    attributes: &[
        Attribute::new("name", "Name", T::String),
        Attribute::new("skills", "Skills", T::String),
        Attribute::new("working_hours", "Working hours", T::String),
        Attribute::new("zone", "Zone", T::String),
        Attribute::new("on_call", "On call", T::String),
    ],
};

const BOOKING: RecordKind = RecordKind {
    prefix: "bkg",
    noun: "booking",
    path: "bookings",
    attributes: &[
        Attribute::new("service", "Service", T::String),
        Attribute::new("status", "Status", T::String),
        Attribute::new("start", "Start", T::DateTime),
        Attribute::new("end", "End", T::DateTime),
        Attribute::new("zone", "Zone", T::String),
        Attribute::new("customer", "Customer", T::String),
        Attribute::new("technician", "Technician", T::String),
        Attribute::new("notes", "Notes", T::String),
    ],
};

const QUOTE: RecordKind = RecordKind {
    prefix: "quo",
    noun: "quote",
    path: "quotes",
    attributes: &[
        Attribute::new("status", "Status", T::String),
        Attribute::new("customer", "Customer", T::String),
        Attribute::new("lines", "Lines", T::String),
        Attribute::new("currency", "Currency", T::String),
        Attribute::new("net", "Net", T::Decimal),
        Attribute::new("tax", "Tax", T::Decimal),
        Attribute::new("total", "Total", T::Decimal),
    ],
};

/// Every kind, in the order the product names them.
pub(crate) const KINDS: &[RecordKind] = &[CUSTOMER, TECHNICIAN, BOOKING, QUOTE];

/// The booking product's records, read through its services.
#[derive(Debug, Clone)]
pub(crate) struct BookingRecords {
    pub(crate) store: Arc<dyn store::Store>,
}

impl Records for BookingRecords {
    fn kinds(&self) -> &'static [RecordKind] {
        KINDS
    }

    fn read<'a>(
        &'a self,
        reader: &'a Reader,
        kind: &'static RecordKind,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Record, RecordError>> {
        Box::pin(async move {
            let actor = booking::Actor {
                tenant: reader.tenant.clone(),
                member: reader.member.clone(),
                rights: reader.rights.clone(),
            };
            let store = Arc::clone(&self.store);
            let read = match kind.prefix {
                "cus" => booking::Customers::new(store)
                    .get(&actor, &booking::CustomerId::new(id))
                    .await
                    .map(|c| customer(&c)),
                "tec" => booking::Technicians::new(store)
                    .get(&actor, &booking::TechnicianId::new(id))
                    .await
                    .map(|t| technician(&t)),
                "bkg" => booking::Bookings::new(store)
                    .get(&actor, &booking::BookingId::new(id))
                    .await
                    .map(|b| booking_record(&b)),
                "quo" => booking::Quotes::new(store)
                    .get(&actor, &booking::QuoteId::new(id))
                    .await
                    .map(|q| quote(&q)),
                _ => return Err(RecordError::NotFound),
            };
            read.map_err(|e| match e {
                booking::BookingError::Forbidden { right } => RecordError::Forbidden {
                    right: right.to_owned(),
                },
                booking::BookingError::Store(_) => RecordError::Unavailable,
                _ => RecordError::NotFound,
            })
        })
    }
}

fn customer(c: &booking::Customer) -> Record {
    Record::default()
        .with("name", c.name.as_str())
        .with("email", c.email.as_str())
        .with_some("phone", c.phone.clone())
        .with_some("address", c.address.clone())
        .with_some(
            "notes",
            c.notes.as_ref().map(|n| n.as_untrusted_str().to_owned()),
        )
}

fn technician(t: &booking::Technician) -> Record {
    Record::default()
        .with("name", t.name.as_str())
        .with("skills", t.skills.join(", "))
        .with("working_hours", t.working_hours.as_str())
        .with("zone", t.zone.as_str())
        .with("on_call", if t.on_call { "yes" } else { "no" })
}

fn booking_record(b: &booking::Booking) -> Record {
    Record::default()
        .with("service", b.service.as_str())
        .with("status", b.status.as_str())
        .with("start", V::DateTime(b.start))
        .with("end", V::DateTime(b.end))
        .with("zone", b.zone.name())
        .with("customer", b.customer.handle())
        .with("technician", b.technician.handle())
        .with("notes", b.notes.join("\n"))
}

fn quote(q: &booking::Quote) -> Record {
    let lines: Vec<String> = q
        .lines
        .iter()
        .zip(&q.totals.line_totals)
        .map(|(line, total)| {
            format!(
                "{} × {} at {} = {total}",
                line.quantity, line.description, line.unit_price
            )
        })
        .collect();
    Record::default()
        .with("status", q.status.as_str())
        .with("customer", q.customer.handle())
        .with("lines", lines.join("\n"))
        .with("currency", q.totals.currency.code())
        .with("net", V::Decimal(q.totals.net.amount()))
        .with("tax", V::Decimal(q.totals.tax.amount()))
        .with("total", V::Decimal(q.totals.gross.amount()))
}
