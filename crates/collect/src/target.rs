//! Whom a recording or a count measures: a launched command, running processes or the whole
//! system (shared by `record`, `stat`, `top` and live `trace`).

/// What to record or count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Launch this command (argv) and follow it and its children.
    Command(Vec<String>),
    /// Attach to these running processes (all their threads).
    Pids(Vec<i32>),
    /// Every CPU, every task; optionally run a command meanwhile and stop when it exits.
    System(Option<Vec<String>>),
}

impl Target {
    /// The target as `perf stat` names it: `'./prog arg'`, `process id '12,34'`,
    /// `'system wide'`.
    pub fn describe(&self) -> String {
        match self {
            Target::Command(argv) => format!("'{}'", argv.join(" ")),
            Target::Pids(p) => format!(
                "process id '{}'",
                p.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Target::System(Some(argv)) => format!("'system wide' while '{}'", argv.join(" ")),
            Target::System(None) => "'system wide'".to_string(),
        }
    }

    /// The command this target launches, if any.
    pub fn command(&self) -> Option<&[String]> {
        match self {
            Target::Command(argv) | Target::System(Some(argv)) => Some(argv),
            _ => None,
        }
    }
}
