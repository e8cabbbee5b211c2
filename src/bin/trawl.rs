//! The `trawl` command: `trawl bench | crawl | fetch | serve` (see `trawl --help`).

fn main() {
    std::process::exit(trawl::cli::main(std::env::args().skip(1).collect()));
}
