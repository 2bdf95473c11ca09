//! `helpdesk`: the gatehouse command line (`serve`, `stdio`, administration) for the helpdesk.

fn main() -> anyhow::Result<()> {
    gatehouse_server::cli::run(helpdesk::Helpdesk::shared())
}
