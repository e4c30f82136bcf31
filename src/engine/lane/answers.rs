//! The answers a lane loses (`--lose-answer-at`): its proxy, started before its first worker
//! and through which every worker of the lane reaches the server, and the answers it kept from
//! them. Not one of the lane's processes: a thread of reclaim's own, stopped with the lane.

use super::Lane;
use crate::warehouse::Warehouse;
use crate::warehouse::postgres::answers::{AnswerProxy, LostAnswer, ProxyError};

/// A lane's proxy, while the night runs, and the answers it lost.
#[derive(Debug, Default)]
pub(super) struct LaneAnswers {
    proxy: Option<AnswerProxy>,
    lost: Vec<LostAnswer>,
    /// Lost and not yet told: taken from the proxy early (`loss_rows`), or lost by a proxy
    /// since stopped.
    unsaid: Vec<LostAnswer>,
}

impl Lane {
    /// Starts the lane's proxy when it has answers to lose, or the dashboard asks for one
    /// (`LaneConfig::answer_proxy`) (on PostgreSQL only: `run` refuses the plan on SQLite
    /// before the night).
    pub(in crate::engine) fn start_answers(&mut self) -> Result<(), ProxyError> {
        let Warehouse::Postgres(server) = &self.config.warehouse else {
            return Ok(());
        };
        let plan = self.config.answer_plan();
        if plan.is_empty() && !self.config.answer_proxy {
            return Ok(());
        }
        let rows = match self.config.worker.job() {
            Some(job) => job.rows.clone(),
            None => crate::warehouse::RowSource::default(),
        };
        let schema = server.schema_for(&self.config.db);
        self.answers.proxy = Some(AnswerProxy::start(server, &schema, &rows, &plan)?);
        Ok(())
    }

    /// Where the lane's workers and jobs are told the rows go: through its proxy when it has
    /// one, else the night's warehouse.
    pub(in crate::engine) fn workers_warehouse(&self) -> Warehouse {
        match &self.answers.proxy {
            Some(proxy) => Warehouse::Postgres(proxy.for_workers().clone()),
            None => self.config.warehouse.clone(),
        }
    }

    /// The answers lost since the last call, kept for the report too.
    pub(in crate::engine) fn take_lost_answers(&mut self) -> Vec<LostAnswer> {
        let mut new = std::mem::take(&mut self.answers.unsaid);
        if let Some(proxy) = &self.answers.proxy {
            new.extend(proxy.take_lost());
        }
        self.answers.lost.extend(new.iter().cloned());
        new
    }

    /// The operator's `L`: the answer to the lane's next commit that brings its rows past
    /// what reclaim has seen is lost, added to the proxy's plan (not to the night's: only the
    /// dashboard has `L`, and no account of planned losses is made there). The row count
    /// planned, or `None` when the lane's workers reach the server through no proxy of
    /// reclaim's (a lane of a job's, SQLite, a server that insists on TLS, a night over).
    pub(in crate::engine) fn lose_answer_by_hand(&mut self) -> Option<u64> {
        let proxy = self.answers.proxy.as_ref()?;
        Some(proxy.lose_next(self.observer.rows + 1))
    }

    /// The row counts at which the lane's answers were lost so far, told or not (those the proxy
    /// has lost are taken from it here, to be told as before).
    pub(in crate::engine) fn loss_rows(&mut self) -> Vec<u64> {
        if let Some(proxy) = &self.answers.proxy {
            self.answers.unsaid.extend(proxy.take_lost());
        }
        let (lost, unsaid) = (self.answers.lost.iter(), self.answers.unsaid.iter());
        lost.chain(unsaid).map(|l| l.rows).collect()
    }

    /// Whether its proxy is running.
    pub(in crate::engine) fn answers_running(&self) -> bool {
        self.answers.proxy.is_some()
    }

    /// Every answer the lane lost, told or not yet.
    #[must_use]
    pub fn lost_answers(&self) -> Vec<LostAnswer> {
        let unsaid = self.answers.unsaid.iter();
        self.answers.lost.iter().chain(unsaid).cloned().collect()
    }

    /// Stops the proxy (its sessions closed), once the lane's workers are gone; the answers it
    /// lost and no worker answered stay to be told (`take_lost_answers`).
    pub(in crate::engine) fn stop_answers(&mut self) {
        if let Some(proxy) = self.answers.proxy.take() {
            self.answers.unsaid.extend(proxy.take_lost());
        }
    }
}
