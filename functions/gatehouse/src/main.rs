//! `gatehouse`: the command-line program.

fn main() -> anyhow::Result<()> {
    Ok(())
}
