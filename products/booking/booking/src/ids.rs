//! Public ids: a kind prefix and a random part (`cus_4fK2...`). Internal keys never leave.

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
