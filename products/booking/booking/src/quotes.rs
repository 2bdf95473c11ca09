//! Quotes: priced lines for a customer, with tax and totals computed here from decimals.

use std::sync::Arc;

use serde_json::json;
use store::{Condition, Item, Put, Store, Value};

use crate::ids::{CustomerId, Kind, QuoteId};
use crate::money::{Currency, Line, TaxRate, Totals, compute_totals};
use crate::text::version_of;
use crate::{Actor, BookingError, Change, Tenants, keys, rights};

/// A line as a caller sends it: decimal strings, never floats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineInput {
    /// What is sold.
    pub description: String,
    /// How many (decimal string, up to 3 decimals).
    pub quantity: String,
    /// Price of one (decimal string).
    pub unit_price: String,
}

/// A quote.
#[derive(Debug, Clone)]
pub struct Quote {
    /// Random id part (`quo_<id>`).
    pub id: QuoteId,
    /// The customer's id part.
    pub customer: CustomerId,
    /// The lines.
    pub lines: Vec<Line>,
    /// Totals, computed from the lines.
    pub totals: Totals,
    /// `draft` or `sent`.
    pub status: String,
    /// Content hash.
    pub version: String,
    /// Created as a deliberate duplicate (`separate`): it holds no claim on its customer and
    /// lines.
    pub separate: bool,
}

impl Quote {
    /// The public handle.
    pub fn handle(&self) -> String {
        self.id.handle()
    }

    /// The claim on this quote's business key: the same customer and the same lines (in
    /// order, as decimals) make the same quote, drafted or sent; a second one is refused as a
    /// duplicate unless it is made `separate` with a reason.
    fn content_claim(
        tenant: &store::TenantId,
        customer: &CustomerId,
        lines: &[Line],
    ) -> store::Key {
        let canonical: Vec<serde_json::Value> = lines
            .iter()
            .map(|l| {
                json!([
                    l.description,
                    l.quantity.normalize().to_string(),
                    l.unit_price.normalize().to_string()
                ])
            })
            .collect();
        let digest = version_of(&json!({"customer": customer, "lines": canonical}));
        keys::unique(tenant, "quote-content", &digest)
    }
}

fn parse_lines(lines: &[LineInput]) -> Result<Vec<Line>, BookingError> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            Line::parse(&l.description, &l.quantity, &l.unit_price).map_err(|e| {
                BookingError::Money {
                    field: "lines",
                    error: crate::money::MoneyError::InLine {
                        line: i,
                        error: Box::new(e),
                    },
                }
            })
        })
        .collect()
}

fn item_of(
    customer: &CustomerId,
    lines: &[Line],
    currency: Currency,
    tax_rate: &TaxRate,
    status: &str,
) -> Item {
    let lines_json: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| json!({"description": l.description, "quantity": l.quantity.to_string(), "unit_price": l.unit_price.to_string()}))
        .collect();
    let mut item = Item::new();
    item.insert("customer".into(), Value::s(customer.as_str()));
    item.insert(
        "lines".into(),
        Value::L(
            lines
                .iter()
                .map(|l| {
                    let mut m = std::collections::BTreeMap::new();
                    m.insert("description".to_owned(), Value::s(&l.description));
                    m.insert("quantity".to_owned(), Value::s(l.quantity.to_string()));
                    m.insert("unit_price".to_owned(), Value::s(l.unit_price.to_string()));
                    Value::M(m)
                })
                .collect(),
        ),
    );
    item.insert("currency".into(), Value::s(currency.code()));
    item.insert("tax_rate".into(), Value::s(tax_rate.percent().to_string()));
    item.insert("status".into(), Value::s(status));
    let version = version_of(
        &json!({"customer": customer, "lines": lines_json, "currency": currency.code(), "tax": tax_rate.percent().to_string(), "status": status}),
    );
    item.insert("version".into(), Value::s(version));
    item
}

fn from_item(id: QuoteId, item: &Item) -> Result<Quote, BookingError> {
    let s = |k: &str| {
        item.get(k)
            .and_then(Value::as_s)
            .unwrap_or_default()
            .to_owned()
    };
    let corrupt = |what: &str| {
        BookingError::Rejected(format!("quote {} is unreadable ({what})", id.handle()))
    };
    let currency = Currency::parse(&s("currency")).map_err(|_| corrupt("currency"))?;
    let tax_rate = TaxRate::parse(&s("tax_rate")).map_err(|_| corrupt("tax rate"))?;
    let lines: Vec<Line> = match item.get("lines") {
        Some(Value::L(list)) => list
            .iter()
            .filter_map(|v| match v {
                Value::M(m) => {
                    let f = |k: &str| {
                        m.get(k)
                            .and_then(Value::as_s)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    Line::parse(&f("description"), &f("quantity"), &f("unit_price")).ok()
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let totals = compute_totals(&lines, currency, tax_rate).map_err(|_| corrupt("lines"))?;
    Ok(Quote {
        id,
        customer: CustomerId::new(s("customer")),
        lines,
        totals,
        status: s("status"),
        version: s("version"),
        separate: item.get("separate") == Some(&Value::Bool(true)),
    })
}

/// The stored item of a quote, keeping its `separate` mark across changes.
fn marked(mut item: Item, separate: bool) -> Item {
    if separate {
        item.insert("separate".into(), Value::Bool(true));
    }
    item
}

/// The quote service.
#[derive(Debug, Clone)]
pub struct Quotes {
    store: Arc<dyn Store>,
    /// Where new ids come from.
    randomness: Arc<dyn outside::Randomness>,
}

impl Quotes {
    /// The service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Quotes {
            store,
            randomness: Arc::new(outside::SystemRandomness),
        }
    }

    /// Draws new ids from `randomness` instead of the system's generator.
    pub fn with_randomness(mut self, randomness: Arc<dyn outside::Randomness>) -> Self {
        self.randomness = randomness;
        self
    }

    /// One quote.
    pub async fn get(&self, actor: &Actor, id: &QuoteId) -> Result<Quote, BookingError> {
        actor.require(rights::BOOKINGS_READ)?;
        let item = self
            .store
            .get(&keys::object(&actor.tenant, Kind::Quote, id.as_str()))
            .await?
            .ok_or_else(|| BookingError::NotFound {
                kind: "quote",
                id: id.handle(),
            })?;
        from_item(id.clone(), &item)
    }

    /// The quotes of a customer, or all, in a status or any, newest first (by id order of the
    /// store), at most `limit`. A customer that is not the tenant's is not found.
    pub async fn find(
        &self,
        actor: &Actor,
        customer: Option<&CustomerId>,
        status: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Quote>, BookingError> {
        actor.require(rights::BOOKINGS_READ)?;
        if let Some(customer) = customer
            && self
                .store
                .get(&keys::object(
                    &actor.tenant,
                    Kind::Customer,
                    customer.as_str(),
                ))
                .await?
                .is_none()
        {
            return Err(BookingError::NotFound {
                kind: "customer",
                id: customer.handle(),
            });
        }
        let keep = |q: &Quote| {
            customer.is_none_or(|c| q.customer == *c) && status.is_none_or(|s| q.status == s)
        };
        let decode = |id: &str, item: &Item| from_item(QuoteId::new(id), item).ok();
        let (tenant, kind) = (&actor.tenant, Kind::Quote);
        let out =
            crate::records::scan(self.store.as_ref(), tenant, kind, decode, keep, limit).await?;
        Ok(out)
    }

    /// Plans a draft quote in the workspace's currency and tax rate. The same customer with
    /// the same lines is one quote: a second needs `separate_reason` (why it is meant).
    pub async fn create(
        &self,
        actor: &Actor,
        customer: &CustomerId,
        lines: &[LineInput],
        separate_reason: Option<&str>,
    ) -> Result<Change<Quote>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        if let Some(reason) = separate_reason {
            crate::text::written("reason", reason, 300, crate::text::Lines::One)?;
        }
        if self
            .store
            .get(&keys::object(
                &actor.tenant,
                Kind::Customer,
                customer.as_str(),
            ))
            .await?
            .is_none()
        {
            return Err(BookingError::NotFound {
                kind: "customer",
                id: customer.handle(),
            });
        }
        let tenant = Tenants::new(self.store.clone())
            .prices(&actor.tenant)
            .await?;
        let currency = Currency::parse(&tenant.currency).map_err(|e| BookingError::Money {
            field: "currency",
            error: e,
        })?;
        let tax_rate =
            TaxRate::parse(&tenant.tax_rate.to_string()).map_err(|e| BookingError::Money {
                field: "tax_rate",
                error: e,
            })?;
        let parsed = parse_lines(lines)?;
        compute_totals(&parsed, currency, tax_rate).map_err(|e| BookingError::Money {
            field: "lines",
            error: e,
        })?;
        let id = QuoteId::new(crate::ids::new_id(self.randomness.as_ref()));
        let separate = separate_reason.is_some();
        let item = marked(
            item_of(customer, &parsed, currency, &tax_rate, "draft"),
            separate,
        );
        let key = keys::object(&actor.tenant, Kind::Quote, id.as_str());
        let quote = from_item(id, &item)?;
        let handle = quote.handle();
        let mut change = Change::new(quote);
        change.push(
            Put::new(key, item).when(Condition::item_not_exists()),
            |_| BookingError::Rejected("a quote with this id exists; try again".into()),
        );
        // The customer read above still exists when the quote lands: a deletion in between
        // fails the quote rather than leaving one nobody can send (ADR 41).
        let named = customer.handle();
        change.push(
            store::ConditionCheck::new(
                keys::object(&actor.tenant, Kind::Customer, customer.as_str()),
                Condition::item_exists(),
            ),
            move |_| BookingError::NotFound {
                kind: "customer",
                id: named.clone(),
            },
        );
        if !separate {
            let key = Quote::content_claim(&actor.tenant, customer, &parsed);
            crate::claims::take(&mut change, key, &handle, "quote", "customer and lines");
        }
        change.ids.push(handle);
        Ok(change)
    }

    /// Plans replacing the lines of a draft quote read at `version`.
    pub async fn update(
        &self,
        actor: &Actor,
        id: &QuoteId,
        version: &str,
        lines: &[LineInput],
    ) -> Result<Change<Quote>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        let current = self.get(actor, id).await?;
        if current.status != "draft" {
            return Err(BookingError::Rejected(format!(
                "quote {} was sent; make a new quote instead of changing it",
                current.handle()
            )));
        }
        at_version(&current, version)?;
        let parsed = parse_lines(lines)?;
        compute_totals(&parsed, current.totals.currency, current.totals.tax_rate).map_err(|e| {
            BookingError::Money {
                field: "lines",
                error: e,
            }
        })?;
        let item = marked(
            item_of(
                &current.customer,
                &parsed,
                current.totals.currency,
                &current.totals.tax_rate,
                "draft",
            ),
            current.separate,
        );
        let quote = from_item(id.clone(), &item)?;
        let handle = quote.handle();
        let expected = version.to_owned();
        let mut change = Change::new(quote);
        let stale_handle = handle.clone();
        change.push(
            Put::new(keys::object(&actor.tenant, Kind::Quote, id.as_str()), item)
                .when(Condition::eq("version", Value::s(version))),
            move |_| BookingError::Stale {
                kind: "quote",
                expected: expected.clone(),
                current: json!({"quote": stale_handle}),
            },
        );
        if !current.separate {
            // The claim follows the lines.
            let claim =
                |lines: &[Line]| Quote::content_claim(&actor.tenant, &current.customer, lines);
            let (from, to) = (claim(&current.lines), claim(&parsed));
            let what = "customer and lines";
            crate::claims::relocate(&mut change, from, to, &handle, "quote", what);
        }
        change.ids.push(handle);
        Ok(change)
    }

    /// Plans sending a draft quote to the customer (it binds the company to a price).
    pub async fn send(
        &self,
        actor: &Actor,
        id: &QuoteId,
        version: &str,
        customer_email: &str,
        text: &str,
    ) -> Result<Change<Quote>, BookingError> {
        actor.require(rights::QUOTES_APPROVE)?;
        let current = self.get(actor, id).await?;
        // The status first: a quote sent meanwhile (perhaps by this very conversation) is
        // sent, whatever version the caller read.
        if current.status != "draft" {
            return Err(BookingError::Rejected(format!(
                "quote {} was sent already",
                current.handle()
            )));
        }
        at_version(&current, version)?;
        let item = marked(
            item_of(
                &current.customer,
                &current.lines,
                current.totals.currency,
                &current.totals.tax_rate,
                "sent",
            ),
            current.separate,
        );
        let quote = from_item(id.clone(), &item)?;
        let handle = quote.handle();
        let mut change = Change::new(quote);
        change.push(
            Put::new(keys::object(&actor.tenant, Kind::Quote, id.as_str()), item)
                .when(Condition::eq("version", Value::s(version))),
            |_| BookingError::Rejected("the quote changed meanwhile; read it again".into()),
        );
        crate::outbox::queue(
            self.randomness.as_ref(),
            &mut change,
            &actor.tenant,
            &outbox_format::Outgoing {
                to: customer_email,
                subject: "Your quote",
                body: text,
                about: &handle,
            },
        );
        change.ids.push(handle);
        Ok(change)
    }
}

/// Refuses a quote that changed since `version` was read.
fn at_version(current: &Quote, version: &str) -> Result<(), BookingError> {
    if current.version == version {
        return Ok(());
    }
    Err(BookingError::Stale {
        kind: "quote",
        expected: version.to_owned(),
        current: json!({"quote": current.handle(), "version": current.version, "status": current.status}),
    })
}
