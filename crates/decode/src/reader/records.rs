//! Delivery of framed records: the side records (COMM, FORK, MMAP, LOST, attrs and event
//! updates of pipe mode) that keep the process and mapping state.

use super::*;

impl<'a, 'p> Reader<'a, 'p> {
    pub(super) fn pipe_attr(&mut self, body: &[u8], off: u64) {
        let Some((mut attr, size)) = header::parse_attr(body, self.be) else {
            self.warn(format!("unreadable HEADER_ATTR at offset {off}"));
            return;
        };
        let mut c = Cur::new(body.get(size..).unwrap_or(&[]), self.be);
        while let Some(id) = c.u64() {
            attr.ids.push(id);
        }
        self.attrs.push(attr);
        self.refresh_attrs();
        // Samples may be delivered before the stream ends: their events must exist.
        self.build_events();
    }

    /// PERF_RECORD_EVENT_UPDATE (pipe mode): type NAME (2) carries an event's name.
    pub(super) fn event_update(&mut self, body: &[u8]) {
        let mut c = Cur::new(body, self.be);
        let (Some(kind), Some(id)) = (c.u64(), c.u64()) else {
            return;
        };
        if kind != 2 {
            return;
        }
        let name = c_string(body.get(16..).unwrap_or(&[]));
        if let Some(&a) = self.id_to_attr.get(&id) {
            if let Some(attr) = self.attrs.get_mut(a as usize) {
                attr.name = Some(name);
            }
        }
    }

    #[inline(always)]
    pub(super) fn deliver(&mut self, r: &Ref) {
        if r.at & (IN_DECOMP | IN_OWNED) == 0 {
            // The common case: the record is in the borrowed input, its header in `r`.
            let data = self.data;
            let at = r.at as usize;
            let body = data
                .get(at.saturating_add(8)..at.saturating_add(usize::from(r.size)))
                .unwrap_or(&[]);
            self.deliver_parts(r, u32::from(r.ty), r.misc, body);
            return;
        }
        self.deliver_buffered(r);
    }

    /// [`Reader::deliver`] of a record in the decompression or stream buffer.
    #[inline(never)]
    pub(super) fn deliver_buffered(&mut self, r: &Ref) {
        // Borrow the bytes from the buffer, moved out for the duration so `self` stays
        // mutable.
        let decomp = std::mem::take(&mut self.decomp);
        let owned = std::mem::take(&mut self.owned);
        let rec: &[u8] = if r.at & IN_DECOMP != 0 {
            record_at(&decomp, (r.at & !IN_DECOMP) as usize, self.be).unwrap_or(&[])
        } else if r.at & IN_OWNED != 0 {
            record_at(&owned, (r.at & !IN_OWNED) as usize, self.be).unwrap_or(&[])
        } else {
            &[]
        };
        self.deliver_record(r, rec);
        self.decomp = decomp;
        self.owned = owned;
    }

    /// Applies one queued record (`rec`: header and body).
    pub(super) fn deliver_record(&mut self, r: &Ref, rec: &[u8]) {
        if let Some((ty, misc, _)) = record_header(rec, self.be) {
            let body = rec.get(8..).unwrap_or(&[]);
            self.deliver_parts(r, ty, misc, body);
        }
    }

    /// Applies one queued record of type `ty` (`body`: after the header).
    #[inline(always)]
    pub(super) fn deliver_parts(&mut self, r: &Ref, ty: u32, misc: u16, body: &[u8]) {
        // Samples first and alone: the other records are handled out of line.
        let ok = if ty == rt::SAMPLE {
            self.sample(r, misc, body)
        } else {
            self.side_record(r, ty, misc, body)
        };
        if ok.is_none() {
            self.malformed(ty, r.file_off);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn malformed(&mut self, ty: u32, file_off: u64) {
        if ty == rt::SAMPLE && !self.part.lite {
            self.p.malformed_samples += 1;
        }
        if self.malformed_types.contains(&ty) {
            return;
        }
        self.malformed_types.push(ty);
        let further = if ty == rt::SAMPLE {
            "; further malformed samples are counted, not listed"
        } else {
            "; further ones of this type are not listed"
        };
        self.warn(format!(
            "{MALFORMED_PREFIX}{ty} at offset {file_off}; skipped{further}"
        ));
    }

    /// Applies a queued record other than a sample.
    #[inline(never)]
    pub(super) fn side_record(&mut self, r: &Ref, ty: u32, misc: u16, body: &[u8]) -> Option<()> {
        if matches!(ty, rt::MMAP | rt::MMAP2 | rt::COMM | rt::FORK | rt::KSYMBOL) {
            if let Some(log) = self.log.as_mut() {
                log.change(r.file_off);
            }
        }
        match ty {
            rt::MMAP | rt::MMAP2 => self.mmap(r, ty, misc, body),
            rt::KSYMBOL => self.ksymbol(r, body),
            rt::COMM => self.comm(r, body),
            rt::FORK => self.fork(r, body),
            rt::EXIT => self.exit(r, body),
            rt::SWITCH | rt::SWITCH_CPU_WIDE => self.switch(r, misc, body),
            rt::LOST | rt::LOST_SAMPLES | rt::THROTTLE if self.part.lite => Some(()),
            rt::LOST => self.lost(body),
            rt::LOST_SAMPLES => {
                let lost = u64_at(body, 0, self.be);
                if let Some(l) = lost {
                    self.p.lost_samples = self.p.lost_samples.saturating_add(l);
                    self.add_lost(r.attr, l);
                }
                lost.map(|_| ())
            }
            rt::THROTTLE => {
                self.p.throttles += 1;
                Some(())
            }
            _ => Some(()),
        }
    }

    pub(super) fn add_lost(&mut self, attr: u16, n: u64) {
        self.p.lost = self.p.lost.saturating_add(n);
        if let Some(e) = self.p.events.get_mut(attr as usize) {
            e.lost = e.lost.saturating_add(n);
        }
    }

    pub(super) fn lost(&mut self, body: &[u8]) -> Option<()> {
        let crate::body::Lost { id, lost: n } = crate::body::Lost::parse(body, self.be)?;
        let attr = self.id_to_attr.get(&id).copied().unwrap_or(0);
        self.p.lost_events = self.p.lost_events.saturating_add(n);
        self.add_lost(attr, n);
        Some(())
    }

    /// The bytes of a non-sample record before its sample_id trailer.
    pub(super) fn without_trailer<'b>(&self, attr: u16, body: &'b [u8]) -> &'b [u8] {
        let t = self.layouts.get(attr as usize).map_or(0, |l| l.trailer_len);
        body.get(..body.len().saturating_sub(t)).unwrap_or(body)
    }

    pub(super) fn comm(&mut self, r: &Ref, body: &[u8]) -> Option<()> {
        let body = self.without_trailer(r.attr, body);
        let comm = crate::body::Comm::parse(body, self.be)?;
        let (pid, tid) = (comm.pid, comm.tid);
        let name = c_string(comm.name);
        self.p
            .thread_pids
            .entry(tid)
            .or_insert(crate::model::RecordedPid { pid, since: r.time });
        // An exec's COMM (COMM_EXEC) keeps the process's maps, as perf does (State::set_comm).
        self.st.set_comm(&mut self.p, tid, &name);
        Some(())
    }

    /// PERF_RECORD_SWITCH(_CPU_WIDE): the task of the sample_id trailer left or entered a
    /// CPU. Kept only when the attrs ask for switch records (not in lite passes).
    pub(super) fn switch(&mut self, r: &Ref, misc: u16, body: &[u8]) -> Option<()> {
        if self.part.lite {
            return Some(());
        }
        let (pid, tid) = self
            .layouts
            .get(r.attr as usize)
            .and_then(|l| {
                let at = body.len().checked_sub(l.trailer_tid?)?;
                let mut c = Cur::new(body.get(at..)?, self.be);
                Some((c.i32()?, c.i32()?))
            })
            .unwrap_or((-1, -1));
        let kind = if misc & abi::misc::SWITCH_OUT != 0 {
            crate::model::SwitchKind::Out {
                preempted: misc & abi::misc::SWITCH_OUT_PREEMPT != 0,
            }
        } else {
            crate::model::SwitchKind::In
        };
        self.p.switches.push(crate::model::TaskSwitch {
            time: r.time,
            pid,
            tid,
            kind,
        });
        Some(())
    }

    /// PERF_RECORD_EXIT: a task ended, leaving its CPU without a switch record. Kept (as a
    /// [`crate::model::SwitchKind::Exit`]) only in files with switch records.
    pub(super) fn exit(&mut self, r: &Ref, body: &[u8]) -> Option<()> {
        let has_switch_records = self
            .attrs
            .iter()
            .any(|a| a.flags & abi::attr_flag::CONTEXT_SWITCH != 0);
        if self.part.lite || !has_switch_records {
            return Some(());
        }
        let mut c = Cur::new(body, self.be);
        let pid = c.i32()?;
        let _ppid = c.i32()?;
        let tid = c.i32()?;
        self.p.switches.push(crate::model::TaskSwitch {
            time: r.time,
            pid,
            tid,
            kind: crate::model::SwitchKind::Exit,
        });
        Some(())
    }

    pub(super) fn fork(&mut self, r: &Ref, body: &[u8]) -> Option<()> {
        let crate::body::Fork {
            pid,
            ppid,
            tid,
            ptid,
        } = crate::body::Fork::parse(body, self.be)?;
        self.p
            .thread_pids
            .entry(tid)
            .or_insert(crate::model::RecordedPid { pid, since: r.time });
        self.st.fork(&mut self.p, pid, ppid, tid, ptid);
        Some(())
    }

    /// A KSYMBOL record: the code it registers becomes a kernel map of its own, in a DSO named
    /// after it, as perf's `machine__process_ksymbol_register` does. An unregistered one
    /// keeps its map: perf removes it, but no sample can land in freed code, and the next
    /// registration at that address replaces it.
    pub(super) fn ksymbol(&mut self, r: &Ref, body: &[u8]) -> Option<()> {
        let body = self.without_trailer(r.attr, body);
        let k = crate::body::Ksymbol::parse(body, self.be)?;
        if k.flags & crate::body::Ksymbol::UNREGISTER != 0 || k.len == 0 {
            return Some(());
        }
        let name = c_string(k.name);
        let dso = self.st.ksymbol_dso(&mut self.p, &name);
        let map = Map {
            start: k.addr,
            end: k.addr.saturating_add(u64::from(k.len)),
            pgoff: 0,
            dso,
            identity: false,
        };
        if !self.st.add_map(true, -1, map) {
            self.warn(format!(
                "too many mappings (limit from the file size); kernel symbol {name} ignored"
            ));
        }
        Some(())
    }

    pub(super) fn mmap(&mut self, r: &Ref, ty: u32, misc: u16, body: &[u8]) -> Option<()> {
        let body = self.without_trailer(r.attr, body);
        let m = crate::body::Mmap::parse(body, ty == rt::MMAP2, misc, self.be)?;
        let (pid, start, len, pgoff) = (m.pid, m.start, m.len, m.pgoff);
        let (build_id, prot) = (m.build_id, m.prot);
        let mode = CpuMode::from_misc(misc);
        let kernel = pid == -1 || matches!(mode, CpuMode::Kernel | CpuMode::GuestKernel);
        if !holds_code(kernel, misc, prot) {
            return Some(());
        }
        let path = c_string(m.filename);
        let before = self.p.dsos.len();
        let (dso, kind) = self.st.dso(&mut self.p, &path, kernel, build_id, pid);
        if self.p.dsos.len() > before {
            // A new DSO: give it its HEADER_BUILD_ID now (streaming readers see it at once).
            if let Some(d) = self.p.dsos.get_mut(dso as usize) {
                if d.build_id.is_none() {
                    d.build_id = self
                        .features
                        .build_ids
                        .iter()
                        .find(|(_, p, ..)| *p == d.path)
                        .map(|(_, _, id, _)| id.clone());
                }
                kernel_image_from_build_ids(&self.features.build_ids, d);
            }
        }
        let identity = matches!(
            kind,
            crate::model::DsoKind::Kernel | crate::model::DsoKind::Anonymous
        );
        let mut end = start.saturating_add(len);
        if kind == crate::model::DsoKind::Kernel {
            // perf extends the kernel map to the next kernel map (modules split it).
            end = u64::MAX;
        }
        let added = self.st.add_map(
            kernel,
            pid,
            Map {
                start,
                end,
                pgoff,
                dso,
                identity,
            },
        );
        if !added {
            self.warn(format!(
                "too many mappings (limit from the file size); {path} for pid {pid} ignored"
            ));
        }
        Some(())
    }
}

/// How the warning about a malformed record begins (its type follows).
const MALFORMED_PREFIX: &str = "malformed record of type ";

/// The record type a "malformed record" warning names (`None`: another warning).
pub(super) fn malformed_type(warning: &str) -> Option<u32> {
    let rest = warning.strip_prefix(MALFORMED_PREFIX)?;
    rest.split(' ').next()?.parse().ok()
}
