//! Public ids: a kind prefix and a random part (`cus_4fK2...`). Internal keys never leave.
//!
//! A record's id part is a type of its kind ([`CustomerId`], [`TechnicianId`], [`BookingId`],
//! [`QuoteId`]), so that a customer's id passed where a technician's is asked does not compile.
//! They are made by the store's `typed_id!`, with the discipline of its ids: each is its
//! text underneath, given up only by name (`as_str`, `into_string`, `Display`, `handle`), and
//! made only by name (`new`): no `Deref` or `From` turns one id into another's text unnoticed.

store::typed_id!(
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
    CustomerId
);
store::typed_id!(
    /// A technician's id part (`tec_<id>`).
    TechnicianId
);
store::typed_id!(
    /// A booking's id part (`bkg_<id>`).
    BookingId
);
store::typed_id!(
    /// A quote's id part (`quo_<id>`).
    QuoteId
);

/// Each record id's public handle: its kind's prefix and the id (`cus_4fK2...`).
macro_rules! handles {
    ($($name:ident => $kind:expr),* $(,)?) => {
        $(impl $name {
            /// The record's public handle: its kind's prefix and the id.
            pub fn handle(&self) -> String {
                $kind.handle(self.as_str())
            }
        })*
    };
}

handles!(
    CustomerId => Kind::Customer,
    TechnicianId => Kind::Technician,
    BookingId => Kind::Booking,
    QuoteId => Kind::Quote,
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
