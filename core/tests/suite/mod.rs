mod agent;
mod caching;
mod context;
mod providers;
mod web;
