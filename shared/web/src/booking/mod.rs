//! The booking product's pages and JSON API (ADR 49): the records pages tool results link to,
//! and one API route per write tool. Reached only through [`crate::ProductPages`], which the
//! platform's pages call for `/api/...` and for a record's page; the booking product hands
//! them over as its pages.

mod api;
mod records;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use http::request::Parts;

use crate::{ProductPages, Web, WebResponse};

/// The booking product's services, as its pages and API use them.
#[derive(Debug, Clone)]
pub struct BookingPages {
    customers: booking::Customers,
    bookings: booking::Bookings,
    technicians: booking::Technicians,
    quotes: booking::Quotes,
    alerts: booking::Alerts,
}

impl BookingPages {
    /// The pages over `store`, drawing ids from `randomness`.
    pub fn new(
        store: Arc<dyn store::Store>,
        randomness: Arc<dyn outside::Randomness>,
    ) -> BookingPages {
        BookingPages {
            customers: booking::Customers::new(Arc::clone(&store))
                .with_randomness(Arc::clone(&randomness)),
            bookings: booking::Bookings::new(Arc::clone(&store))
                .with_randomness(Arc::clone(&randomness)),
            technicians: booking::Technicians::new(Arc::clone(&store))
                .with_randomness(Arc::clone(&randomness)),
            quotes: booking::Quotes::new(Arc::clone(&store)).with_randomness(randomness),
            alerts: booking::Alerts::new(store),
        }
    }
}

/// One API request's view: the platform's pages (store, gates, tokens) and the product's
/// services.
pub(crate) struct BookingApi<'a> {
    web: &'a Web,
    pub(crate) customers: &'a booking::Customers,
    pub(crate) bookings: &'a booking::Bookings,
    pub(crate) quotes: &'a booking::Quotes,
    pub(crate) alerts: &'a booking::Alerts,
    technicians: &'a booking::Technicians,
}

impl std::ops::Deref for BookingApi<'_> {
    type Target = Web;

    fn deref(&self) -> &Web {
        self.web
    }
}

impl BookingApi<'_> {
    /// The product's notifying writes, which the API routes call like the tools do.
    pub(crate) fn use_cases(&self) -> booking::UseCases {
        booking::UseCases {
            customers: self.customers.clone(),
            technicians: self.technicians.clone(),
            bookings: self.bookings.clone(),
            quotes: self.quotes.clone(),
        }
    }
}

impl ProductPages for BookingPages {
    fn api<'a>(
        &'a self,
        web: &'a Web,
        parts: &'a Parts,
        path: &'a str,
        body: &'a [u8],
    ) -> BoxFuture<'a, WebResponse> {
        Box::pin(async move {
            let view = BookingApi {
                web,
                customers: &self.customers,
                bookings: &self.bookings,
                quotes: &self.quotes,
                alerts: &self.alerts,
                technicians: &self.technicians,
            };
            api::handle(&view, parts, path, body).await
        })
    }

    fn record<'a>(
        &'a self,
        web: &'a Web,
        session: &'a accounts::Session,
        path: &'a str,
    ) -> BoxFuture<'a, WebResponse> {
        Box::pin(records::page(web, session, path))
    }
}
