//! The helpdesk's pages and JSON API on AWS Lambda (`gatehouse_server::web_lambda`).

fn main() -> std::process::ExitCode {
    gatehouse_server::web_lambda::run(helpdesk::Helpdesk::shared())
}
