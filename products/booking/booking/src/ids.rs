//! Public ids: a kind prefix and a random part (`cus_4fK2...`). Internal keys never leave.
//!
//! A record's id part is a type of its kind ([`CustomerId`], [`TechnicianId`], [`BookingId`],
//! [`QuoteId`]), so that a customer's id passed where a technician's is asked does not compile.
//! They keep the discipline of the store's ids (`store::TenantId`): each is its text
//! underneath, given up only by name (`as_str`, `into_string`, `Display`, `handle`), and made
//! only by name (`new`): no `Deref` or `From` turns one id into another's text unnoticed.

use std::fmt;

// The store's id macro is private to it, and these ids add their kind's handle, so the
// booking crate makes its own, to the same pattern.
macro_rules! record_id {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id written as `text` (the id part of a handle, read from a key or a
            /// request): made only by name, so that no other id's text becomes this one
            /// unnoticed.
            pub fn new(text: impl Into<String>) -> Self {
                $name(text.into())
            }

            /// The id's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, owned.
            pub fn into_string(self) -> String {
                self.0
            }

            /// The record's public handle: its kind's prefix and the id.
            pub fn handle(&self) -> String {
                $kind.handle(&self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

record_id!(
    /// A customer's id part (`cus_<id>`). A technician's schedule takes a technician's id:
    ///
    /// ```
    /// use booking::ids::{CustomerId, TechnicianId};
    /// let tenant = store::TenantId::new("acme");
    /// let technician = TechnicianId::new("9dL2mQ7xZk1VbN3cR5tW");
    /// let key = booking::keys::schedule(&tenant, &technician);
    /// assert_eq!(key.sk, "!schedule#9dL2mQ7xZk1VbN3cR5tW");
    /// assert_eq!(CustomerId::new("4fK2").handle(), "cus_4fK2");
    /// ```
    ///
    /// and a customer's is not one:
    ///
    /// ```compile_fail
    /// use booking::ids::CustomerId;
    /// let tenant = store::TenantId::new("acme");
    /// let customer = CustomerId::new("4fK2aZ9qLm3Xt7Bv1NcR");
    /// booking::keys::schedule(&tenant, &customer);
    /// ```
    CustomerId,
    Kind::Customer
);
record_id!(
    /// A technician's id part (`tec_<id>`).
    TechnicianId,
    Kind::Technician
);
record_id!(
    /// A booking's id part (`bkg_<id>`).
    BookingId,
    Kind::Booking
);
record_id!(
    /// A quote's id part (`quo_<id>`).
    QuoteId,
    Kind::Quote
);

/// A new random id part (20 characters, about 119 bits), drawn from `randomness`.
pub fn new_id(randomness: &dyn outside::Randomness) -> String {
    outside::random_text(randomness, 20)
}

/// Kinds of objects with public ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `cus_`
    Customer,
    /// `tec_`
    Technician,
    /// `bkg_`
    Booking,
    /// `quo_`
    Quote,
    /// `msg_` (outbox messages)
    Message,
}

impl Kind {
    /// The handle prefix (without `_`).
    pub const fn prefix(self) -> &'static str {
        match self {
            Kind::Customer => "cus",
            Kind::Technician => "tec",
            Kind::Booking => "bkg",
            Kind::Quote => "quo",
            Kind::Message => "msg",
        }
    }

    /// The noun.
    pub const fn noun(self) -> &'static str {
        match self {
            Kind::Customer => "customer",
            Kind::Technician => "technician",
            Kind::Booking => "booking",
            Kind::Quote => "quote",
            Kind::Message => "message",
        }
    }

    /// The public handle of an id.
    pub fn handle(self, id: &str) -> String {
        format!("{}_{id}", self.prefix())
    }

    /// The kind and id of a handle in its exact form (`bkg_` + 20 letters and digits), or
    /// `None`. (Tools accept looser forms too; this is for naming a record's key.)
    pub fn parse_handle(text: &str) -> Option<(Kind, &str)> {
        let (prefix, id) = text.split_once('_')?;
        let kind = [
            Kind::Customer,
            Kind::Technician,
            Kind::Booking,
            Kind::Quote,
            Kind::Message,
        ]
        .into_iter()
        .find(|k| k.prefix() == prefix)?;
        (id.len() == 20 && id.bytes().all(|b| b.is_ascii_alphanumeric())).then_some((kind, id))
    }
}
