//! `culprit lock`: lock contention, with perf's verbs (`perf lock record`, `perf lock
//! contention`): kernel locks from `lock:contention_begin/end` with call chains, and user
//! locks (pthread mutexes, condition variables) from futex waits with user stacks
//! (`culprit_analysis::lock`; docs/wall-clock.md).

use std::process::ExitCode;

use culprit_verbs::lock;

use crate::args::{Format, InputArgs, OutputArgs};
use crate::cmd::record;

/// Arguments of `culprit lock`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Lock contention (perf lock): kernel locks and futex waits, with call sites and stacks",
    after_help = crate::help::layout("EXAMPLES:\n  culprit lock record -- ./prog       kernel lock contention and futex waits of ./prog (-g)\n  culprit lock contention             per call site: contended, total, max, avg wait\n  culprit lock record --states -- ./prog\n                                      also the scheduler events: culprit html draws thread states\n\nThe kernel table reads `perf lock record` files too.")
)]
pub struct LockArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: LockCommand,
}

/// The `culprit lock` verbs.
#[derive(clap::Subcommand, Debug)]
pub enum LockCommand {
    /// Record lock contention and futex waits with call chains.
    Record(LockRecordArgs),
    /// Per call site (kernel locks) and per futex (user locks): waits and their times.
    Contention(ContentionArgs),
}

/// Arguments of `culprit lock record`.
#[derive(clap::Args, Debug)]
#[command(trailing_var_arg = true)]
pub struct LockRecordArgs {
    /// `-o FILE`, `-m PAGES`, `-q`.
    #[command(flatten)]
    pub preset: record::PresetArgs,
    /// The whole system (the default without a command).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Also record the scheduler's switches and wake-ups (system-wide: implies -a), so that
    /// `culprit html` draws each thread's states, its lock waits among them, and `culprit
    /// sched timehist` reads the file.
    #[arg(long)]
    pub states: bool,
    /// The command to run while recording.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Arguments of `culprit lock contention`.
#[derive(clap::Args, Debug)]
pub struct ContentionArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Kernel call-chain frames to skip (perf's --stack-skip).
    #[arg(long = "stack-skip", value_name = "N", default_value_t = 3)]
    pub stack_skip: usize,
    /// Waiter stacks shown per futex.
    #[arg(long = "stacks", value_name = "N", default_value_t = 3)]
    pub stacks: usize,
    /// `--format text|json`, `-o FILE`.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `culprit lock`.
pub fn run(args: LockArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        LockCommand::Record(a) => run_record(a),
        LockCommand::Contention(a) => run_contention(a),
    }
}

/// `culprit record -c 1 -g -e <LOCK_EVENTS>[,<STATE_EVENTS>] [-a] -m PAGES -o FILE [-- CMD]`.
fn run_record(a: LockRecordArgs) -> anyhow::Result<ExitCode> {
    let flags = lock::record_flags(a.all_cpus, a.states, !a.command.is_empty());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    record::run_preset(&flags, &a.preset, &a.command)
}

fn run_contention(a: ContentionArgs) -> anyhow::Result<ExitCode> {
    a.output
        .require("lock contention", &[Format::Text, Format::Json])?;
    let report = lock::contention(&lock::ContentionOptions {
        input: a.input.open(),
        stack_skip: a.stack_skip,
        top_stacks: a.stacks,
    })?;
    a.output.render(&report)?;
    Ok(report.exit_status())
}
