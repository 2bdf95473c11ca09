//! The outbox dispatcher function (`gatehouse_server::outbox_lambda`): no product needed.

fn main() -> std::process::ExitCode {
    gatehouse_server::outbox_lambda::run()
}
