//! Presenters: explicit field lists, never a whole record.

use booking::Customer;
use booking::text::UntrustedText;
use schemars::JsonSchema;
use serde::Serialize;

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

impl From<&UntrustedText> for Untrusted {
    fn from(t: &UntrustedText) -> Self {
        Untrusted {
            untrusted_text: t.untrusted_text.clone(),
            truncated: t.truncated,
            note: t.note.to_owned(),
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
    name: String,
    email: String,
    phone: Option<String>,
    address: Option<String>,
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
            name: c.name.clone(),
            email: c.email.clone(),
            phone: c.phone.clone(),
            address: c.address.clone(),
            notes: c.notes.as_ref().map(Untrusted::from),
        }
    }
}
