//! The `tapec` command line: reads the arguments, calls the library, exits.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "tapec",
    version,
    about = "An interpreter for the tape language: run programs, record tapes, read blame.",
    after_help = "Example:\n  tapec run programs/attention.tape"
)]
struct Cli {
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    color: Color,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Run a program; the arguments after it are ParamStr(1), ParamStr(2), ...
    #[command(
        after_help = "Example:\n  tapec run programs/attention.tape\n  tapec run bench/gpt.tape 27 8 16 64 200"
    )]
    Run {
        file: PathBuf,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Parse and check a program without running it, reporting every error at once.
    #[command(after_help = "Example:\n  tapec check programs/attention.tape")]
    Check { file: PathBuf },
}

fn main() {
    let cli = Cli::parse();
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let code = match cli.command {
        Some(Command::Run { file, args }) => {
            let interrupt = Arc::new(AtomicBool::new(false));
            let flag = interrupt.clone();
            let _ = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed));
            let mut opts = tapec::RunOptions::new(file);
            opts.args = args;
            opts.color = color;
            opts.interrupt = Some(interrupt);
            opts.progress_on_terminal = std::io::stderr().is_terminal();
            tapec::with_big_stack(move || {
                let out = std::io::BufWriter::new(std::io::stdout());
                let mut err = std::io::stderr();
                tapec::run_file(&opts, Box::new(out), &mut err)
            })
        }
        Some(Command::Check { file }) => {
            let mut opts = tapec::RunOptions::new(file);
            opts.color = color;
            tapec::check_file(&opts, &mut std::io::stderr())
        }
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "tapec: give a command; see `tapec --help`"
            );
            2
        }
    };
    std::process::exit(code);
}
