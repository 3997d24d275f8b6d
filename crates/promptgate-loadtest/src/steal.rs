//! CPU time the hypervisor gave to other guests ("steal"), from /proc/stat. On a shared virtual
//! machine a run that met a burst of steal has a tail that says more about the host than about
//! the gateway; the report prints it beside the numbers.

/// The machine's CPU counters at one moment: steal ticks and all ticks.
#[derive(Debug, Clone, Copy)]
pub struct CpuTicks {
    steal: u64,
    total: u64,
}

impl CpuTicks {
    /// Now, or `None` where /proc/stat is not there to read.
    pub fn now() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        parse(stat.lines().next()?)
    }

    /// The share of CPU time stolen between `self` and `later`, in percent.
    pub fn steal_percent_until(&self, later: &CpuTicks) -> Option<f64> {
        let total = later.total.checked_sub(self.total)?;
        let steal = later.steal.checked_sub(self.steal)?;
        (total > 0).then(|| 100.0 * steal as f64 / total as f64)
    }
}

/// The aggregate `cpu` line: user nice system idle iowait irq softirq steal [guest guest_nice].
fn parse(line: &str) -> Option<CpuTicks> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let values: Vec<u64> = fields.take(8).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    let steal = *values.get(7)?;
    Some(CpuTicks {
        steal,
        total: values.iter().sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_its_share_of_all_ticks() {
        let before = parse("cpu  100 0 50 800 0 0 0 50 0 0").unwrap();
        let after = parse("cpu  200 0 100 1500 0 0 0 200 0 0").unwrap();
        let share = before.steal_percent_until(&after).unwrap();
        assert!((share - 15.0).abs() < 1e-9, "{share}");
        assert!(
            parse("cpu0 1 2 3 4 5 6 7 8").is_none(),
            "per-CPU lines are not the total"
        );
        assert!(parse("cpu 1 2 3").is_none(), "too few fields");
    }
}
