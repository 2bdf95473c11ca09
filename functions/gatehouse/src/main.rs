//! `gatehouse` for the booking product: the command line of `gatehouse_server::cli`, with the
//! process's allocator.

mod allocator;

/// mimalloc, with the option `allocator` sets as the executable loads (ADR 19, ADR 33).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    gatehouse_server::cli::run(booking_product::Booking::shared())
}
