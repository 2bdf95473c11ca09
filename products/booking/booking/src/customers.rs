//! Customers: the people a field-service company works for.

use std::sync::Arc;

use serde_json::json;
use store::{Condition, Item, Put, Store, Value};

use crate::bookings::LATEST_BOOKING;
use crate::ids::{CustomerId, Kind};
use crate::text::{Lines, UntrustedText, untrusted, version_of, written};
use crate::{Actor, BookingError, Change, keys, rights};

/// A customer as services hand it out: public fields only. Secrets (the portal password hash)
/// stay in the stored item and are never read into this type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Customer {
    /// Random id part (the handle is `cus_<id>`).
    pub id: CustomerId,
    /// Name.
    pub name: String,
    /// Email address.
    pub email: String,
    /// Phone number.
    pub phone: Option<String>,
    /// Postal address.
    pub address: Option<String>,
    /// What the customer wrote (third-party text).
    pub notes: Option<UntrustedText>,
    /// Content hash.
    pub version: String,
    /// Created as a deliberate duplicate (`separate`): it holds no claim on its email.
    pub separate: bool,
}

impl Customer {
    /// The public handle.
    pub fn handle(&self) -> String {
        self.id.handle()
    }

    fn from_item(id: CustomerId, item: &Item) -> Self {
        let s = |k: &str| item.get(k).and_then(Value::as_s).map(str::to_owned);
        Customer {
            id,
            name: s("name").unwrap_or_default(),
            email: s("email").unwrap_or_default(),
            phone: s("phone"),
            address: s("address"),
            notes: s("notes").map(|n| untrusted(&n, 500)),
            version: s("version").unwrap_or_default(),
            separate: item.get("separate") == Some(&Value::Bool(true)),
        }
    }

    /// The claim on this customer's email.
    fn email_claim(tenant: &store::TenantId, email: &str) -> store::Key {
        keys::unique(tenant, "customer-email", email)
    }
}

/// What a new customer needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewCustomer {
    /// Name (1 to 100 characters).
    pub name: String,
    /// Email (the business key: one customer per address).
    pub email: String,
    /// Phone.
    pub phone: Option<String>,
    /// Address.
    pub address: Option<String>,
    /// Notes the customer wrote.
    pub notes: Option<String>,
}

/// Changes to a customer; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomerPatch {
    /// New name.
    pub name: Option<String>,
    /// New email.
    pub email: Option<String>,
    /// New phone.
    pub phone: Option<String>,
    /// New address.
    pub address: Option<String>,
}

/// Normalizes an email for the uniqueness key; refuses what is not an address.
pub fn normalize_email(email: &str) -> Result<String, BookingError> {
    let e = email.trim().to_lowercase();
    let valid = e.len() <= 254
        && e.split_once('@')
            .is_some_and(|(local, domain)| email_local_part(local) && email_domain(domain));
    if valid {
        Ok(e)
    } else {
        Err(BookingError::invalid(
            "email",
            format!(
                "{email:?} is not an email address like name@example.com, written in plain \
                 ASCII: no spaces or quotes, a domain of letters, digits and hyphens with a dot \
                 (an international domain in its xn-- form)"
            ),
        ))
    }
}

/// The part before the `@`: the ASCII characters RFC 5322 allows unquoted. Nothing else, so
/// that an address cannot carry spaces, invisible characters or text that reads as words
/// into the summaries and approval prompts that name the recipient, and two addresses that
/// look the same are the same (the duplicate guard's key).
fn email_local_part(local: &str) -> bool {
    (1..=64).contains(&local.len())
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+/=?^_`{|}~.-".contains(&b))
}

/// The part after the `@`: dot-separated labels of ASCII letters, digits and inner hyphens.
fn email_domain(domain: &str) -> bool {
    let labels: Vec<&str> = domain.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|label| {
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

fn check_phone(phone: &str) -> Result<String, BookingError> {
    let p = phone.trim();
    if p.is_empty()
        || p.len() > 32
        || !p
            .chars()
            .all(|c| c.is_ascii_digit() || " +-()/".contains(c))
    {
        return Err(BookingError::invalid(
            "phone",
            "digits, spaces and + - ( ) / only, at most 32 characters",
        ));
    }
    Ok(p.to_owned())
}

fn public_json(
    name: &str,
    email: &str,
    phone: Option<&str>,
    address: Option<&str>,
    notes: Option<&str>,
) -> serde_json::Value {
    json!({"name": name, "email": email, "phone": phone, "address": address, "notes": notes})
}

fn item_of(
    name: &str,
    email: &str,
    phone: Option<&str>,
    address: Option<&str>,
    notes: Option<&str>,
    secret: Option<&Value>,
    separate: bool,
) -> Item {
    let mut item = Item::new();
    if separate {
        item.insert("separate".into(), Value::Bool(true));
    }
    item.insert("name".into(), Value::s(name));
    item.insert("email".into(), Value::s(email));
    if let Some(p) = phone {
        item.insert("phone".into(), Value::s(p));
    }
    if let Some(a) = address {
        item.insert("address".into(), Value::s(a));
    }
    if let Some(n) = notes {
        item.insert("notes".into(), Value::s(n));
    }
    if let Some(secret) = secret {
        item.insert("portal_password_hash".into(), secret.clone());
    }
    item.insert(
        "version".into(),
        Value::s(version_of(&public_json(name, email, phone, address, notes))),
    );
    item
}

/// The update that sets a customer's own attributes to those of `new_item` and leaves every
/// other attribute as it is: an edit never moves or drops the latest-booking mark (ADR 41),
/// which a deletion in flight may be counting on even when the edit keeps the version. Setting
/// is the whole edit: `new_item` holds every attribute the stored customer has (a patch changes
/// values and never clears one; notes, the portal secret and `separate` are carried over).
fn own_attributes(new_item: Item) -> Vec<store::UpdateAction> {
    new_item
        .into_iter()
        .map(|(name, value)| store::UpdateAction::Set(name, value))
        .collect()
}

/// The customer service.
#[derive(Debug, Clone)]
pub struct Customers {
    store: Arc<dyn Store>,
    /// Where new ids come from.
    randomness: Arc<dyn outside::Randomness>,
}

impl Customers {
    /// The service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Customers {
            store,
            randomness: Arc::new(outside::SystemRandomness),
        }
    }

    /// Draws new ids from `randomness` instead of the system's generator.
    pub fn with_randomness(mut self, randomness: Arc<dyn outside::Randomness>) -> Self {
        self.randomness = randomness;
        self
    }

    /// One customer of the actor's tenant.
    pub async fn get(&self, actor: &Actor, id: &CustomerId) -> Result<Customer, BookingError> {
        actor.require(rights::BOOKINGS_READ)?;
        self.load(actor, id).await.map(|(c, _)| c)
    }

    async fn load(&self, actor: &Actor, id: &CustomerId) -> Result<(Customer, Item), BookingError> {
        let item = self
            .store
            .get(&keys::object(&actor.tenant, Kind::Customer, id.as_str()))
            .await?
            .ok_or_else(|| BookingError::NotFound {
                kind: "customer",
                id: id.handle(),
            })?;
        Ok((Customer::from_item(id.clone(), &item), item))
    }

    /// Customers whose name or email contains `text` (case-insensitive), at most `limit`.
    pub async fn find(
        &self,
        actor: &Actor,
        text: &str,
        limit: usize,
    ) -> Result<Vec<Customer>, BookingError> {
        let needle = text.trim().to_lowercase();
        let matches = |c: &Customer| {
            needle.is_empty()
                || c.name.to_lowercase().contains(&needle)
                || c.email.contains(&needle)
        };
        self.scan(actor, matches, limit).await
    }

    /// Every customer named exactly `name` (trimmed, case-insensitive): all of them, however
    /// many others the tenant has, so that a name that is not unique is never taken for one
    /// that is.
    pub async fn named(&self, actor: &Actor, name: &str) -> Result<Vec<Customer>, BookingError> {
        let name = name.trim().to_lowercase();
        let same = |c: &Customer| c.name.trim().to_lowercase() == name;
        self.scan(actor, same, usize::MAX).await
    }

    /// The tenant's customers that `keep` keeps, at most `limit`, in the store's order.
    async fn scan(
        &self,
        actor: &Actor,
        keep: impl Fn(&Customer) -> bool,
        limit: usize,
    ) -> Result<Vec<Customer>, BookingError> {
        actor.require(rights::BOOKINGS_READ)?;
        let decode = |id: &str, item: &Item| Some(Customer::from_item(CustomerId::new(id), item));
        let (tenant, kind) = (&actor.tenant, Kind::Customer);
        crate::records::scan(self.store.as_ref(), tenant, kind, decode, keep, limit).await
    }

    /// Plans a new customer. The email is unique per tenant unless `separate_reason` says why
    /// a second customer with the address is needed.
    pub fn create(
        &self,
        actor: &Actor,
        new: NewCustomer,
        separate_reason: Option<&str>,
    ) -> Result<Change<Customer>, BookingError> {
        self.create_with_secret(actor, new, separate_reason, None)
    }

    /// [`Customers::create`] with a portal password hash (seeding and the product's sign-up).
    pub fn create_with_secret(
        &self,
        actor: &Actor,
        new: NewCustomer,
        separate_reason: Option<&str>,
        portal_password_hash: Option<String>,
    ) -> Result<Change<Customer>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        let name = written("name", &new.name, 100, Lines::One)?;
        let email = normalize_email(&new.email)?;
        let phone = new.phone.as_deref().map(check_phone).transpose()?;
        let address = new
            .address
            .as_deref()
            .map(|a| written("address", a, 300, Lines::Many))
            .transpose()?;
        let notes = new
            .notes
            .as_deref()
            .map(|n| written("notes", n, 2000, Lines::Many))
            .transpose()?;
        if let Some(reason) = separate_reason {
            written("reason", reason, 300, Lines::One)?;
        }
        let id = CustomerId::new(crate::ids::new_id(self.randomness.as_ref()));
        let secret = portal_password_hash.map(Value::S);
        let item = item_of(
            &name,
            &email,
            phone.as_deref(),
            address.as_deref(),
            notes.as_deref(),
            secret.as_ref(),
            separate_reason.is_some(),
        );
        let key = keys::object(&actor.tenant, Kind::Customer, id.as_str());
        let customer = Customer::from_item(id, &item);
        let handle = customer.handle();
        let mut change = Change::new(customer);
        change.push(
            Put::new(key, item).when(Condition::item_not_exists()),
            |_| BookingError::Rejected("a customer with this id exists; try again".into()),
        );
        if separate_reason.is_none() {
            let key = Customer::email_claim(&actor.tenant, &email);
            crate::claims::take(&mut change, key, &handle, "customer", "email");
        }
        change.ids.push(handle);
        Ok(change)
    }

    /// Plans changes to a customer the caller read at `version`.
    pub async fn update(
        &self,
        actor: &Actor,
        id: &CustomerId,
        version: &str,
        patch: CustomerPatch,
    ) -> Result<Change<Customer>, BookingError> {
        actor.require(rights::BOOKINGS_WRITE)?;
        let (current, item) = self.load(actor, id).await?;
        if current.version != version {
            return Err(BookingError::Stale {
                kind: "customer",
                expected: version.to_owned(),
                current: json!({"customer": current.handle(), "version": current.version}),
            });
        }
        let name = patch
            .name
            .as_deref()
            .map(|n| written("name", n, 100, Lines::One))
            .transpose()?
            .unwrap_or(current.name.clone());
        let email = patch
            .email
            .as_deref()
            .map(normalize_email)
            .transpose()?
            .unwrap_or(current.email.clone());
        let phone = match patch.phone.as_deref() {
            Some(p) => Some(check_phone(p)?),
            None => current.phone.clone(),
        };
        let address = match patch.address.as_deref() {
            Some(a) => Some(written("address", a, 300, Lines::Many)?),
            None => current.address.clone(),
        };
        let notes = item.get("notes").and_then(Value::as_s).map(str::to_owned);
        let new_item = item_of(
            &name,
            &email,
            phone.as_deref(),
            address.as_deref(),
            notes.as_deref(),
            item.get("portal_password_hash"),
            current.separate,
        );
        let updated = Customer::from_item(id.clone(), &new_item);
        let handle = updated.handle();
        let key = keys::object(&actor.tenant, Kind::Customer, id.as_str());
        let mut change = Change::new(updated);
        let expected = version.to_owned();
        let stale_handle = id.handle();
        change.push(
            store::Update::new(key, own_attributes(new_item))
                .when(Condition::eq("version", Value::s(version))),
            move |_| BookingError::Stale {
                kind: "customer",
                expected: expected.clone(),
                current: json!({"customer": stale_handle}),
            },
        );
        if !current.separate {
            // The address moves with its claim: the old one goes, the new one must be free.
            let from = Customer::email_claim(&actor.tenant, &current.email);
            let to = Customer::email_claim(&actor.tenant, &email);
            crate::claims::relocate(&mut change, from, to, &handle, "customer", "email");
        }
        change.ids.push(handle);
        Ok(change)
    }

    /// Plans deleting a customer (and the claim on their email). Refused while the customer
    /// has open bookings (drafts or confirmed): cancelling one needs its customer, so they would
    /// be left confirmed, holding the technician's time, with nobody to tell.
    pub async fn delete(
        &self,
        actor: &Actor,
        id: &CustomerId,
    ) -> Result<Change<Customer>, BookingError> {
        actor.require(rights::RECORDS_DELETE)?;
        let (current, item) = self.load(actor, id).await?;
        // Read before the bookings: a booking made after this read moves the mark (see
        // `Bookings::create_draft`), and the deletion's condition below sees that.
        let latest_booking = item.get(LATEST_BOOKING).cloned();
        let theirs = crate::BookingFilter {
            customer: Some(id.clone()),
            ..crate::BookingFilter::default()
        };
        let open: Vec<String> =
            crate::bookings::matching(self.store.as_ref(), &actor.tenant, &theirs)
                .await?
                .iter()
                .filter(|b| matches!(b.status, crate::Status::Draft | crate::Status::Confirmed))
                .map(crate::Booking::handle)
                .collect();
        if !open.is_empty() {
            return Err(BookingError::Rejected(format!(
                "{} has {} open booking(s) ({}): cancel them first (cancel_bookings with this customer), then delete",
                current.handle(),
                open.len(),
                open.join(", ")
            )));
        }
        let handle = current.handle();
        let version = current.version.clone();
        let email = current.email.clone();
        let separate = current.separate;
        let mut change = Change::new(current);
        let unbooked = match latest_booking.clone() {
            Some(mark) => Condition::eq(LATEST_BOOKING, mark),
            None => Condition::NotExists(LATEST_BOOKING.into()),
        };
        change.push(
            store::Delete::new(keys::object(&actor.tenant, Kind::Customer, id.as_str()))
                .when(Condition::eq("version", Value::s(&version)).and(unbooked))
                .return_old_on_failure(),
            move |now: Option<&Item>| {
                let moved = now.is_some_and(|i| i.get(LATEST_BOOKING) != latest_booking.as_ref());
                BookingError::Rejected(if moved {
                    "a booking was made for this customer while the deletion ran; nothing was deleted: ask for the deletion again, which names any booking still open".into()
                } else {
                    "the customer changed since it was read; read it again".into()
                })
            },
        );
        if !separate {
            crate::claims::release(
                &mut change,
                Customer::email_claim(&actor.tenant, &email),
                &handle,
            );
        }
        change.ids.push(handle);
        Ok(change)
    }
}
