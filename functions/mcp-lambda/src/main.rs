//! The booking product's MCP endpoint on AWS Lambda (`gatehouse_server::lambda`).

/// mimalloc: glibc's malloc and free took a fifth of the CPU per call under load (ADR 19).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    gatehouse_server::lambda::run(booking_product::Booking::shared())
}
