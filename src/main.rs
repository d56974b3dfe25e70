//! The `tapec` command line: reads the arguments, calls the library, exits.
//! It also chooses the allocator, which is the binary's business.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand, ValueEnum};

#[global_allocator]
static ALLOCATOR: tapec::memory::Mimalloc = tapec::memory::Mimalloc;

#[derive(Parser)]
#[command(
    name = "tapec",
    version,
    about = "An interpreter for the tape language: run programs, record tapes, read blame.",
    after_help = "Example:\n  tapec run programs/attention.tape\n  tapec programs/attention.tape   (the same)"
)]
struct Cli {
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    color: Color,
    #[command(flatten)]
    threads: Threads,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

/// `--threads`, taken by the commands that run a program (and before a
/// program file: `tapec --threads 1 FILE`), not by those that only read one.
#[derive(clap::Args, Clone, Copy)]
struct Threads {
    /// Threads for large matrix products (default: TAPEC_THREADS, else the
    /// machine's cores). The results are the same, bit for bit, at any count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=tapec::threads::MOST as i64))]
    threads: Option<u32>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a program; the arguments after it are ParamStr(1), ParamStr(2), ...
    #[command(
        after_help = "Example:\n  tapec run programs/attention.tape\n  tapec run bench/gpt.tape 27 8 16 64 200"
    )]
    Run {
        /// The program file, then its arguments: every word after the file
        /// is the program's, `--color` and `--threads` too (put tapec's
        /// options before the file).
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "FILE [ARGS]"
        )]
        words: Vec<String>,
        #[command(flatten)]
        threads: Threads,
    },
    /// Parse and check a program without running it, reporting every error at once.
    #[command(after_help = "Example:\n  tapec check programs/attention.tape")]
    Check {
        /// The program file.
        file: PathBuf,
    },
    /// Run a program and draw its last tape: DOT on stdout, or a .dot/.svg/.png file, or an .html page that steps through the walk.
    #[command(
        after_help = "Example:\n  tapec graph programs/attention.tape -o attention.svg\n  tapec graph programs/attention.tape > attention.dot\n  tapec graph programs/attention.tape --walk\n\nSVG and PNG are drawn by tapec itself; DOT is for Graphviz."
    )]
    Graph {
        /// The program file.
        file: PathBuf,
        /// Where to write the picture (.dot, .svg, .png, or .html for the walk page); DOT on stdout if absent.
        #[arg(short, long, conflicts_with = "walk")]
        output: Option<PathBuf>,
        /// Print the reverse walk of the last tape, step by step, instead.
        #[arg(long)]
        walk: bool,
        #[command(flatten)]
        threads: Threads,
    },
    /// Translate a program into a Python script that computes the same numbers with PyTorch.
    #[command(
        after_help = "Example:\n  tapec export programs/gpt.tape            (writes programs/gpt.py)\n  tapec export programs/knob.tape -o knob.py\n\nThe script imports tape_runtime.py, written beside it."
    )]
    Export {
        /// The program file.
        file: PathBuf,
        /// Where to write the script; FILE with `.py` if absent.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// `tapec FILE.tape [ARGS...]`: the same as `tapec run FILE.tape [ARGS...]`.
    #[command(external_subcommand)]
    File(Vec<OsString>),
    /// The interactive prompt: enter statements one at a time and watch each value.
    #[command(
        after_help = "Example:\n  tapec repl\n  tapec repl < session.txt   (a piped transcript: no prompts)"
    )]
    Repl {
        #[command(flatten)]
        threads: Threads,
    },
    /// A language server for editors, over stdin and stdout: errors as you type, hover, definition, completion.
    #[command(
        after_help = "Example:\n  tapec lsp   (started by an editor, such as the extension in editors/vscode)\n\nIt speaks the Language Server Protocol; exit status 0 after shutdown and exit, 1 otherwise."
    )]
    Lsp,
    /// The "Tape" kernel for Jupyter: install it, or run it (Jupyter starts it).
    #[command(
        subcommand,
        after_help = "Example:\n  tapec jupyter install --user\n  jupyter lab   (then pick the \"Tape\" kernel)"
    )]
    Jupyter(Jupyter),
}

#[derive(Subcommand)]
enum Jupyter {
    /// Write the kernelspec (kernel.json and logos) where Jupyter looks for kernels.
    #[command(
        after_help = "Example:\n  tapec jupyter install --user\n  tapec jupyter install --sys-prefix   (the active Python environment)\n  tapec jupyter install --prefix /tmp/env   (/tmp/env/share/jupyter/kernels/tape)"
    )]
    Install {
        /// The user's Jupyter data folder (JUPYTER_DATA_DIR, else ~/.local/share/jupyter on Linux). The default.
        #[arg(long, conflicts_with_all = ["sys_prefix", "prefix"])]
        user: bool,
        /// The Python environment's share/jupyter (VIRTUAL_ENV, else python3's sys.prefix).
        #[arg(long, conflicts_with = "prefix")]
        sys_prefix: bool,
        /// DIR/share/jupyter.
        #[arg(long, value_name = "DIR")]
        prefix: Option<PathBuf>,
    },
    /// Run the kernel on a connection file (what kernel.json tells Jupyter to start).
    #[command(
        after_help = "Example:\n  tapec jupyter kernel -f ~/.local/share/jupyter/runtime/kernel-1.json\n\nJupyter starts this itself, with the file it wrote, once the kernel is installed (`tapec jupyter install`)."
    )]
    Kernel {
        /// The connection file Jupyter wrote.
        #[arg(required_unless_present = "file")]
        connection_file: Option<PathBuf>,
        /// The connection file, named as ipykernel takes it (`-f FILE`).
        #[arg(
            short = 'f',
            value_name = "CONNECTION_FILE",
            conflicts_with = "connection_file"
        )]
        file: Option<PathBuf>,
        #[command(flatten)]
        threads: Threads,
    },
}

/// `tapec jupyter install`.
fn install_kernel(sys_prefix: bool, prefix: Option<PathBuf>) -> i32 {
    use tapec::jupyter::kernelspec::{Place, install};
    let place = match (sys_prefix, prefix) {
        (_, Some(dir)) => Place::Prefix(dir),
        (true, None) => Place::SysPrefix,
        (false, None) => Place::User,
    };
    let executable = match std::env::current_exe().and_then(|p| p.canonicalize()) {
        Ok(path) => path,
        Err(e) => {
            eprintln!("tapec jupyter install: cannot find tapec's own path: {e}");
            return 1;
        }
    };
    match install(&place, &executable) {
        Ok(dir) => {
            println!("installed the Tape kernel in {}", dir.display());
            0
        }
        Err(message) => {
            eprintln!("tapec jupyter install: {message}");
            1
        }
    }
}

/// `tapec run FILE [ARGS...]`.
fn run(file: PathBuf, args: Vec<String>, color: bool) -> i32 {
    let interrupt = Arc::new(AtomicBool::new(false));
    let flag = interrupt.clone();
    let _ = ctrlc::set_handler(move || {
        // A second Ctrl-C before the run has stopped for the first (it
        // waits in a read that does not end, or in one long operation)
        // ends tapec at once.
        if flag.swap(true, Ordering::Relaxed) {
            eprintln!("interrupted");
            std::process::exit(tapec::EXIT_INTERRUPTED);
        }
    });
    let mut opts = tapec::RunOptions::new(file);
    opts.args = args;
    opts.color = color;
    opts.interrupt = Some(interrupt);
    opts.progress_on_terminal = std::io::stderr().is_terminal();
    tapec::with_big_stack(move || {
        // On a terminal each line shows as it is written (a training loop's
        // losses appear while it trains); piped, it is buffered.
        let out: Box<dyn Write> = if std::io::stdout().is_terminal() {
            Box::new(std::io::LineWriter::new(std::io::stdout()))
        } else {
            Box::new(std::io::BufWriter::new(std::io::stdout()))
        };
        let mut err = std::io::stderr();
        tapec::run_file(&opts, out, &mut err)
    })
}

fn main() {
    let cli = Cli::parse();
    match tapec::threads::from_env() {
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "tapec: {message}");
            std::process::exit(2);
        }
        Ok(from_env) => {
            let given = match &cli.command {
                Some(
                    Command::Run { threads, .. }
                    | Command::Graph { threads, .. }
                    | Command::Repl { threads }
                    | Command::Jupyter(Jupyter::Kernel { threads, .. }),
                ) => threads.threads,
                _ => None,
            };
            if let Some(n) = given
                .or(cli.threads.threads)
                .map(|n| n as usize)
                .or(from_env)
            {
                tapec::threads::set(n);
            }
        }
    }
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let code = match cli.command {
        Some(Command::Run { mut words, .. }) => {
            let file = PathBuf::from(words.remove(0));
            run(file, words, color)
        }
        Some(Command::File(words)) => {
            let file = PathBuf::from(&words[0]);
            // A folder is a path meant as a program too: its run says why
            // it cannot be read, as `tapec run` of it does.
            if file.extension().is_some_and(|e| e == "tape") || file.is_file() || file.is_dir() {
                let args = words[1..]
                    .iter()
                    .map(|w| w.to_string_lossy().into_owned())
                    .collect();
                run(file, args, color)
            } else {
                let _ = writeln!(
                    std::io::stderr(),
                    "tapec: `{}` is neither a command nor a program file; see `tapec --help`",
                    file.display()
                );
                2
            }
        }
        Some(Command::Check { file }) => {
            let mut opts = tapec::RunOptions::new(file);
            opts.color = color;
            tapec::with_big_stack(move || tapec::check_file(&opts, &mut std::io::stderr()))
        }
        Some(Command::Graph {
            file,
            output: _,
            walk: true,
            ..
        }) => {
            let mut opts = tapec::RunOptions::new(file);
            opts.color = color;
            tapec::with_big_stack(move || {
                let mut out = std::io::BufWriter::new(std::io::stdout());
                tapec::walk_file(&opts, &mut out, &mut std::io::stderr())
            })
        }
        Some(Command::Graph { file, output, .. }) => {
            let mut opts = tapec::RunOptions::new(file);
            opts.color = color;
            tapec::with_big_stack(move || {
                let out = std::io::BufWriter::new(std::io::stdout());
                let mut err = std::io::stderr();
                tapec::graph_file(&opts, output.as_deref(), Box::new(out), &mut err)
            })
        }
        Some(Command::Export { file, output }) => {
            let mut opts = tapec::RunOptions::new(file);
            opts.color = color;
            tapec::with_big_stack(move || {
                tapec::export_file(&opts, output.as_deref(), &mut std::io::stderr())
            })
        }
        Some(Command::Repl { .. }) => tapec::repl::run_on_stdin(color),
        Some(Command::Lsp) => tapec::lsp::run_on_stdio(),
        Some(Command::Jupyter(Jupyter::Install {
            user: _,
            sys_prefix,
            prefix,
        })) => install_kernel(sys_prefix, prefix),
        Some(Command::Jupyter(Jupyter::Kernel {
            connection_file,
            file,
            ..
        })) => match connection_file.or(file) {
            Some(path) => tapec::jupyter::run_kernel(&path),
            None => unreachable!("clap requires one of the two"),
        },
        None if std::io::stdin().is_terminal() => tapec::repl::run_on_stdin(color),
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "tapec: give a command, such as `tapec run FILE`, or `tapec repl` to read \
                 entries from this input; see `tapec --help`"
            );
            2
        }
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Each command's `--help` ends with an example of its own, not one it
    /// took from the command above it, and describes each of its arguments.
    #[test]
    fn every_command_has_an_example_of_its_own() {
        fn walk(command: &clap::Command, parent: Option<String>, seen: &mut usize) {
            let after = command.get_after_help().map(|h| h.to_string());
            let name = command.get_name();
            let text = after.clone().unwrap_or_default();
            assert!(text.contains("Example:"), "`{name}` has no example");
            assert_ne!(after, parent, "`{name}` repeats its parent's example");
            // And every argument and option says what it is.
            for arg in command.get_arguments() {
                let said = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                assert!(
                    !said.trim().is_empty(),
                    "`{name}`: `{}` has no description",
                    arg.get_id()
                );
            }
            *seen += 1;
            for sub in command.get_subcommands() {
                walk(sub, after.clone(), seen);
            }
        }
        let mut seen = 0;
        walk(&Cli::command(), None, &mut seen);
        assert!(seen >= 10, "only {seen} commands");
    }
}
