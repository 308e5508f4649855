//! Terms and modifiers: applies a resolved event's `/terms/` (special terms such as
//! `period=` and `name=`, PMU format fields placed into config words, table-event terms)
//! and its `:mods` to build the [`EventSpec`].

use super::*;

impl EventParser {
    /// Applies terms to a resolved target.
    pub(super) fn build(
        &self,
        target: Target,
        terms: &str,
        event: &str,
    ) -> Result<EventSpec, EventError> {
        let mut words = Words::default();
        let spec = match target {
            Target::Fixed {
                attr_type,
                config,
                pmu,
                format_pmu,
                kind,
            } => {
                words.config = config;
                // A hybrid core PMU's generic event counts on that PMU's CPUs only.
                let cpus = format_pmu.as_ref().and_then(|p| p.cpus.clone());
                let formats = format_pmu.map(|p| p.formats).unwrap_or_default();
                for (key, value) in split_terms(terms) {
                    if self.special_term(&mut words, key, value, event)? {
                        continue;
                    }
                    let field = formats.iter().find(|f| f.name == key);
                    match field {
                        // Raw events may refine their code with the cpu PMU's terms.
                        Some(field) => {
                            let v = term_value(key, value, event)?;
                            words.set_field(field, v, event)?;
                        }
                        None => {
                            let mut known: Vec<String> =
                                SPECIAL_TERMS.iter().map(|s| s.to_string()).collect();
                            known.extend(formats.iter().map(|f| f.name.clone()));
                            return Err(EventError::UnknownTerm {
                                event: event.to_string(),
                                pmu: kind,
                                term: key.to_string(),
                                known,
                            });
                        }
                    }
                }
                let mut spec = EventSpec::new(event, pmu.as_deref(), attr_type, words.config);
                spec.config1 = words.config1;
                spec.config2 = words.config2;
                spec.cpus = cpus;
                spec
            }
            Target::Table(e, pmu) => {
                self.apply_table_terms(&pmu, &mut words, &e, event)?;
                for (key, value) in split_terms(terms) {
                    self.apply_pmu_term(&pmu, &mut words, key, value, event, false)?;
                }
                let mut spec = EventSpec::new(event, Some(&pmu.name), pmu.attr_type, words.config);
                spec.config1 = words.config1;
                spec.config2 = words.config2;
                spec.cpumask = pmu.cpumask;
                spec.cpus = pmu.cpus;
                spec
            }
            Target::Pmu(pmu) => {
                // `tsc` written bare: behave as `msr/tsc/`.
                let bare_alias = !event.contains('/');
                let head = event.split(['/', ':']).next().unwrap_or(event);
                if bare_alias {
                    self.apply_pmu_term(&pmu, &mut words, head, None, event, true)?;
                } else {
                    let list = split_terms(terms);
                    if list.is_empty() {
                        // `ibs_op//` is fine (all zero); `cpu//` means nothing to count.
                        if pmu.name == "cpu" {
                            return Err(EventError::Syntax {
                                event: event.to_string(),
                                why: "no terms: say what to count, e.g. `cpu/event=0x76/` or an alias from `culprit list`".to_string(),
                            });
                        }
                    }
                    for (key, value) in list {
                        self.apply_pmu_term(&pmu, &mut words, key, value, event, true)?;
                    }
                }
                let mut spec = EventSpec::new(event, Some(&pmu.name), pmu.attr_type, words.config);
                spec.config1 = words.config1;
                spec.config2 = words.config2;
                spec.cpumask = pmu.cpumask;
                spec.cpus = pmu.cpus;
                spec
            }
            // parse_event_instances builds each of them alone; never nested.
            Target::Each { .. } => {
                return Err(EventError::Unsupported {
                    event: event.to_string(),
                    what: "an event of several PMUs inside another".to_string(),
                })
            }
        };
        let mut spec = spec;
        spec.rate = words.rate;
        spec.table_period = words.table_period;
        spec.scale_unit = words.scale_unit;
        spec.call_graph = words.call_graph;
        spec.stack_size = words.stack_size;
        if let Some(name) = words.name {
            spec.name = name;
        }
        Ok(spec)
    }

    /// `period=`, `freq=`, `name=`; returns whether the term was one of those.
    pub(super) fn special_term(
        &self,
        words: &mut Words,
        key: &str,
        value: Option<&str>,
        event: &str,
    ) -> Result<bool, EventError> {
        match key {
            "period" | "freq" => {
                let v = term_value(key, value, event)?;
                if v == 0 {
                    return Err(EventError::BadValue {
                        event: event.to_string(),
                        term: key.to_string(),
                        value: "0".to_string(),
                    });
                }
                let rate = if key == "period" {
                    SampleRate::Period(v)
                } else {
                    SampleRate::Frequency(v)
                };
                if words
                    .rate
                    .is_some_and(|r| std::mem::discriminant(&r) != std::mem::discriminant(&rate))
                {
                    return Err(EventError::Syntax {
                        event: event.to_string(),
                        why: "both `period=` and `freq=` given; use one".to_string(),
                    });
                }
                words.rate = Some(rate);
                Ok(true)
            }
            "name" => {
                let v = value.unwrap_or("").trim_matches(['\'', '"']);
                if v.is_empty() || v.contains(|c: char| c.is_whitespace() || c == ',' || c == '/') {
                    return Err(EventError::Syntax {
                        event: event.to_string(),
                        why: format!(
                            "bad `name={}`: give a name without spaces, commas or `/`",
                            value.unwrap_or("")
                        ),
                    });
                }
                words.name = Some(v.to_string());
                Ok(true)
            }
            // perf's per-event call graph terms: `cycles/call-graph=dwarf,stack-size=4096/`.
            "call-graph" => {
                words.call_graph = Some(match value.unwrap_or("") {
                    "fp" => EventCallGraph::Fp,
                    "dwarf" => EventCallGraph::Dwarf,
                    "no" => EventCallGraph::No,
                    other => {
                        return Err(EventError::Syntax {
                            event: event.to_string(),
                            why: format!(
                                "bad `call-graph={other}`: culprit records `fp`, `dwarf` or `no` \
                                 call graphs (perf's `lbr` needs LBR call stacks, which culprit \
                                 does not record)"
                            ),
                        })
                    }
                });
                Ok(true)
            }
            "stack-size" => {
                let v = term_value(key, value, event)?;
                if v == 0 || v % 8 != 0 || v > 65528 {
                    return Err(EventError::BadValue {
                        event: event.to_string(),
                        term: key.to_string(),
                        value: v.to_string(),
                    });
                }
                words.stack_size = Some(v as u32);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// One term of a `pmu/…/` event: special, config word, format field or alias.
    pub(super) fn apply_pmu_term(
        &self,
        pmu: &Pmu,
        words: &mut Words,
        key: &str,
        value: Option<&str>,
        event: &str,
        allow_alias: bool,
    ) -> Result<(), EventError> {
        if self.special_term(words, key, value, event)? {
            return Ok(());
        }
        if CONFIG_TERMS.contains(&key) {
            let v = term_value(key, value, event)?;
            match key {
                "config" => words.config = v,
                "config1" => words.config1 = v,
                _ => words.config2 = v,
            }
            return Ok(());
        }
        if let Some(field) = pmu.format(key) {
            let v = term_value(key, value, event)?;
            return words.set_field(field, v, event);
        }
        if allow_alias && value.is_none() {
            // `cpu/mem_load_retired.l3_miss/`: a table event of this PMU, as perf's aliases.
            let table_event = self.table().and_then(|t| {
                t.events_named(key)
                    .find(|e| tables::pmu_serves(&pmu.name, e.pmu))
            });
            if let Some(e) = table_event {
                return self.apply_table_terms(pmu, words, e, event);
            }
            if let Some(alias) = pmu.alias(key) {
                // An alias is itself a term list over the same PMU's formats; it cannot
                // refer to further aliases.
                for (k, v) in split_terms(&alias.terms) {
                    self.apply_pmu_term(pmu, words, k, v, event, false)?;
                }
                if alias.scale.is_some() || alias.unit.is_some() {
                    words.scale_unit = Some((
                        alias.scale.clone().unwrap_or_else(|| "1".to_string()),
                        alias.unit.clone().unwrap_or_default(),
                    ));
                }
                return Ok(());
            }
        }
        let mut known: Vec<String> = pmu.formats.iter().map(|f| f.name.clone()).collect();
        known.extend(CONFIG_TERMS.iter().map(|s| s.to_string()));
        known.extend(SPECIAL_TERMS.iter().map(|s| s.to_string()));
        known.extend(pmu.events.iter().map(|a| a.name.clone()));
        Err(EventError::UnknownTerm {
            event: event.to_string(),
            pmu: format!("PMU {}", pmu.name),
            term: key.to_string(),
            known,
        })
    }

    /// A table event's terms (`event=0xd1,umask=0x20,period=100007`) through the PMU's
    /// formats. The JSON's `period` is perf's default sample period for the event, which
    /// `-c`/`-F` override; culprit does not apply it yet (the global rate applies).
    pub(super) fn apply_table_terms(
        &self,
        pmu: &Pmu,
        words: &mut Words,
        e: &TableEvent,
        event: &str,
    ) -> Result<(), EventError> {
        if let Some(su) = tables::scale_unit(e.scale_unit) {
            words.scale_unit = Some(su);
        }
        for (key, value) in split_terms(&e.terms) {
            // The table's period is perf's weak sample period (EventSpec::table_period).
            if key == "period" {
                words.table_period = Some(term_value(key, value, event)?);
                continue;
            }
            // The JSON's `"MSRValue": "None"` (Nehalem/Westmere latency events) is no value:
            // perf leaves config1 at 0 for it.
            if value == Some("None") {
                continue;
            }
            self.apply_pmu_term(pmu, words, key, value, event, false)?;
        }
        Ok(())
    }

    /// perf's modifiers (see [`crate::events::modifiers`]), then what culprit checks up front: IBS
    /// privilege filtering. The precision is passed on as written, as perf does (the kernel
    /// decides); [`EventParser::precise_refusal`] explains at open time what it will refuse.
    /// `on_group`: the modifiers of a `{…}:mods` group, applied to a member.
    pub(super) fn apply_modifiers(
        &self,
        spec: &mut EventSpec,
        mods: &str,
        event: &str,
        on_group: bool,
    ) -> Result<(), EventError> {
        let privilege =
            crate::events::modifiers::apply_perf_modifiers(spec, mods, event, on_group)?;
        if privilege {
            self.check_ibs_privilege_filter(spec, mods, event)?;
        }
        Ok(())
    }
}
