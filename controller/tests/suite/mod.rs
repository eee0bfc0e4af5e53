mod agent;
mod context;
mod providers;
