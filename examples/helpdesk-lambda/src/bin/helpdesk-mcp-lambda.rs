//! The helpdesk's MCP endpoint on AWS Lambda (`gatehouse_server::lambda`).

/// mimalloc, as every gatehouse binary (ADR 19).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    gatehouse_server::lambda::run(helpdesk::Helpdesk::shared())
}
