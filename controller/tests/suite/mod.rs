mod agent;
mod context;
mod providers;
mod store;
mod web;
