//! Event lists and groups: splits a `-e` list at its top-level commas, and parses
//! `{a,b}:mods` groups (modifiers applied to every member, `S` for leader sampling).

use super::*;

impl EventParser {
    /// Parses a comma-separated list; commas inside `/…/` belong to the event. `{a,b}` is an
    /// event group, `{a,b}:mods` applies the modifiers to every member, and `S` among them
    /// is leader sampling (as perf's parser).
    pub fn parse_event_list(&self, spec: &str) -> Result<Vec<EventSpec>, EventError> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut inside = false;
        let mut depth = 0usize;
        for (i, c) in spec.char_indices() {
            match c {
                // `mem:ADDR/LEN` has one `/`, not a term list.
                '/' if !crate::events::breakpoint::is_breakpoint(&spec[start..i]) => {
                    inside = !inside
                }
                '{' if !inside => {
                    if depth > 0 || !spec[start..i].trim().is_empty() {
                        return Err(group_error(
                            spec,
                            "`{` must start an item, and groups do not nest",
                        ));
                    }
                    depth += 1;
                }
                '}' if !inside => {
                    if depth == 0 {
                        return Err(group_error(spec, "`}` without an opening `{`"));
                    }
                    depth -= 1;
                }
                ',' if !inside && depth == 0 => {
                    self.parse_group_or_item(&spec[start..i], spec, &mut out)?;
                    start = i + 1;
                }
                _ => {}
            }
        }
        if depth > 0 {
            return Err(group_error(spec, "`{` without a closing `}`"));
        }
        self.parse_group_or_item(&spec[start..], spec, &mut out)?;
        Ok(out)
    }

    /// One item of a list: an event, or a `{…}` group with its modifiers.
    pub(super) fn parse_group_or_item(
        &self,
        item: &str,
        whole: &str,
        out: &mut Vec<EventSpec>,
    ) -> Result<(), EventError> {
        let Some(body) = item.trim().strip_prefix('{') else {
            if self.is_tracepoint(item) {
                out.extend(self.tracepoints(item.trim())?);
                return Ok(());
            }
            out.extend(self.parse_item(item, whole)?);
            return Ok(());
        };
        let Some((inner, tail)) = body.rsplit_once('}') else {
            return Err(group_error(whole, "`{` without a closing `}`"));
        };
        let mods = match tail.strip_prefix(':') {
            Some(m) => m,
            None if tail.trim().is_empty() => "",
            None => {
                return Err(group_error(
                    whole,
                    "after `}` only `:modifiers` may follow (`{a,b}:S`, `{a,b}:u`)",
                ))
            }
        };
        let leader_sampling = mods.contains('S');
        let shared: String = mods.chars().filter(|&c| c != 'S').collect();
        let members = self.parse_event_list(inner)?;
        if members.iter().any(|m| m.group.is_some()) {
            return Err(group_error(whole, "groups do not nest"));
        }
        if let Some(ibs) = members
            .iter()
            .find(|m| m.pmu.as_deref().is_some_and(|p| p.starts_with("ibs")))
        {
            return Err(EventError::Unsupported {
                event: ibs.name.clone(),
                what: "IBS events cannot be in an event group (the IBS PMUs schedule alone)"
                    .to_string(),
            });
        }
        for (i, mut m) in members.into_iter().enumerate() {
            if !shared.is_empty() {
                self.apply_modifiers(&mut m, &shared, whole, true)?;
                // As perf names them: the group's modifiers follow the member's own.
                if m.name.ends_with('/') || m.name.contains(':') {
                    m.name.push_str(&shared);
                } else {
                    m.name = format!("{}:{shared}", m.name);
                }
            }
            m.group = Some(EventGroup {
                leader: i == 0,
                leader_sampling,
            });
            out.push(m);
        }
        Ok(())
    }

    pub(super) fn parse_item(&self, item: &str, whole: &str) -> Result<Vec<EventSpec>, EventError> {
        if item.trim().is_empty() {
            return Err(EventError::Empty {
                spec: whole.to_string(),
            });
        }
        self.parse_event_instances(item)
    }
}

/// An event group that does not parse.
fn group_error(spec: &str, why: &str) -> EventError {
    EventError::Syntax {
        event: spec.to_string(),
        why: format!("event group: {why}"),
    }
}
