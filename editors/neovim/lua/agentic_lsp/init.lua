--- agentic-lsp for Neovim: client setup (vim.lsp.config, nvim-lspconfig or vim.lsp.start) and
--- the Lua API behind the :Agentic* commands. See :help agentic_lsp.
local client = require('agentic_lsp.client')
local config = require('agentic_lsp.config')
local events = require('agentic_lsp.events')

local M = {}

-- Lazy access to the bigger modules (they load on first use).
local function review()
  return require('agentic_lsp.review')
end

local function lspconfig_available()
  return pcall(require, 'lspconfig.configs')
end

--- Register agentic_lsp with nvim-lspconfig (`require('lspconfig').agentic_lsp.setup{}` then
--- works) and return lspconfig's server table.
function M.lspconfig()
  local configs = require('lspconfig.configs')
  if not configs[config.name] then
    local defaults = config.lsp_config()
    defaults.name = nil
    configs[config.name] = {
      default_config = defaults,
      docs = { description = 'agentic-lsp: AI code intelligence (search, workflows, reviewable changesets)' },
    }
  end
  return require('lspconfig')[config.name]
end

--- Start (or reuse) the client for `bufnr` without vim.lsp.config (Neovim 0.10, or lsp = 'start').
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local filetypes = config.options.filetypes
  if filetypes and not vim.tbl_contains(filetypes, vim.bo[bufnr].filetype) then
    return nil
  end
  local root = config.find_root(vim.api.nvim_buf_get_name(bufnr))
  if not root then
    return nil
  end
  local cfg = config.lsp_config()
  cfg.root_dir, cfg.root_markers, cfg.filetypes = root, nil, nil
  return vim.lsp.start(cfg, { bufnr = bufnr })
end

local function start_with_autocmd()
  local group = vim.api.nvim_create_augroup('agentic_lsp.start', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].filetype ~= '' then
      M.attach(buf)
    end
  end
end

--- Which way `lsp = 'auto'` starts the client here.
function M.lsp_mode()
  local mode = config.options.lsp
  if mode ~= 'auto' then
    return mode
  end
  if vim.fn.has('nvim-0.11') == 1 then
    return 'native'
  end
  if lspconfig_available() then
    return 'lspconfig'
  end
  return 'start'
end

local function watch_progress()
  local group = vim.api.nvim_create_augroup('agentic_lsp.progress', { clear = true })
  vim.api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(args)
      local c = vim.lsp.get_client_by_id(args.data.client_id)
      local value = args.data.params and args.data.params.value
      if not (config.options.notify.progress and c and c.name == config.name and type(value) == 'table') then
        return
      end
      local parts = { value.title, value.message }
      if value.percentage then
        table.insert(parts, value.percentage .. '%')
      end
      events.notify(table.concat(
        vim.tbl_filter(function(p)
          return p ~= nil and p ~= ''
        end, parts),
        ' — '
      ))
    end,
  })
end

--- Configure the plugin and start the client the chosen way (see :help agentic_lsp-setup).
---@param opts? table
function M.setup(opts)
  config.set(opts)
  watch_progress()
  local mode = M.lsp_mode()
  if mode == 'native' then
    vim.lsp.config(config.name, config.lsp_config())
    vim.lsp.enable(config.name)
  elseif mode == 'lspconfig' then
    M.lspconfig().setup({})
  elseif mode == 'start' then
    start_with_autocmd()
  end
  return M
end

-- -- API ------------------------------------------------------------------------------------------

--- Start a workflow run on `task` (`workflow` nil: the orchestrator picks), optionally with
--- editor `context` (see require('agentic_lsp.context').build). `done(err, runId)`.
function M.run(task, workflow, done, context)
  local c = client.get()
  local arg = { task = task, workflow = workflow, root = c and client.folder_of(c) or nil, context = context }
  client.execute('runWorkflow', arg, function(err, result)
    if err then
      events.notify('agentic-lsp: ' .. err, vim.log.levels.ERROR)
    end
    if done then
      done(err, result and result.runId)
    end
  end, c)
end

--- The editor context of `opts.range` ({line1, line2}; nil: the cursor) in buffer `opts.bufnr`
--- (default: current), in the client's offset encoding, and the vim.diagnostic entries it
--- carries; nil and the error (also notified) when the buffer is no file.
---@param opts? {range?: integer[], bufnr?: integer}
---@return table? context, table[]|string diagnostics_or_err
function M.context(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local c = client.get(bufnr)
  local ctx, diagnostics, err = require('agentic_lsp.context').build({
    bufnr = bufnr,
    range = opts.range,
    encoding = c and c.offset_encoding or nil,
  })
  if not ctx then
    events.notify('agentic-lsp: ' .. err, vim.log.levels.ERROR)
    return nil, err
  end
  return ctx, diagnostics
end

--- Start a run about the code at the cursor or in `opts.range` ({line1, line2}) of the current
--- buffer, with that place, its diagnostics and the buffer as editor context. `kind`: 'fix' or
--- 'explain' (the default task: "Fix: <first diagnostic>", "Explain the selected code", …);
--- `opts.task` overrides the task, `opts.workflow` picks the workflow. `done(err, runId)`.
---@param kind 'fix'|'explain'
---@param opts? {range?: integer[], task?: string, workflow?: string, bufnr?: integer}
function M.run_here(kind, opts, done)
  opts = opts or {}
  local ctx, diagnostics = M.context(opts)
  if not ctx then
    return done and done(diagnostics)
  end
  local task = opts.task and vim.trim(opts.task) ~= '' and opts.task
    or require('agentic_lsp.context').task(kind, opts.range ~= nil, diagnostics)
  M.run(task, opts.workflow, done, ctx)
end

function M.fix(opts, done)
  M.run_here('fix', opts, done)
end

function M.explain(opts, done)
  M.run_here('explain', opts, done)
end

local function runs()
  return require('agentic_lsp.runs')
end

--- Cancel run `run_id` (default: the newest running, waiting or interrupted run).
function M.cancel(run_id, done)
  runs().cancel(run_id, done)
end

--- :AgenticRuns — pick a run, then what to do with it.
function M.runs(done)
  runs().pick(done)
end

--- The status window of run `run_id` (text graph of its stages, the pending review).
function M.run_status(run_id, done)
  require('agentic_lsp.run_view').open(run_id, nil, done)
end

--- Approve the stage run `run_id` waits at (default: the newest waiting run).
function M.approve(run_id, done)
  runs().approve(run_id, done)
end

--- Open the plan files (plan.md, tickets.md) of a run waiting at its plan gate.
function M.open_plan(run_id, done)
  runs().open_plan(run_id, done)
end

--- Send the stage under review back with `feedback`.
function M.revise(feedback, run_id, done)
  runs().revise(feedback, run_id, done)
end

--- Queue `text` for the next model call of a run (default: the newest running or waiting one).
function M.message(text, run_id, done)
  runs().message(text, run_id, done)
end

--- Prune stage `stage` of a run (default: the newest running or waiting one).
function M.prune(stage, run_id, done)
  runs().prune(stage, run_id, done)
end

--- Resume an interrupted run (default: the newest one).
function M.resume(run_id, done)
  runs().resume(run_id, done)
end

function M.search(query, opts)
  require('agentic_lsp.search').search(query, opts)
end

function M.changes(all)
  review().changes(all)
end

--- Open the review tab of `id`; without one, of the only pending changeset, or pick one.
function M.diff(id, opts)
  if id then
    return require('agentic_lsp.diff').open(id, opts)
  end
  review().list(false, function(err, found)
    if err then
      return events.notify('agentic-lsp: ' .. err, vim.log.levels.ERROR)
    end
    if #found == 1 then
      require('agentic_lsp.diff').open(found[1].id, opts)
    else
      review().changes(false)
    end
  end)
end

--- Accept the hunk / file / changeset ('hunk' | 'file' | 'all') at the cursor, or changeset `id`.
function M.accept(scope, id, done)
  review().decide_here('accept', scope, id, done)
end

function M.reject(scope, id, done)
  review().decide_here('reject', scope, id, done)
end

function M.refine(feedback, id, done)
  review().refine(feedback, id, done)
end

function M.refresh(id, done)
  review().refresh(id, done)
end

function M.rollback(id, done)
  review().rollback(id, done)
end

--- Server, index, runs and pending changesets, as lines (shown with vim.notify).
function M.status(done)
  local c = client.get()
  if not c then
    vim.notify(client.NOT_RUNNING, vim.log.levels.WARN, { title = 'agentic-lsp' })
    return done and done(nil)
  end
  local info = c.server_info or {}
  local lines = { ('%s %s — client %d'):format(info.name or 'agentic-lsp', info.version or '?', c.id) }
  client.execute('indexStatus', {}, function(err, result)
    if err then
      table.insert(lines, 'index: ' .. err)
    end
    for _, root in ipairs(result and result.roots or {}) do
      table.insert(
        lines,
        ('index %s: %s, %d files, %d symbols%s'):format(
          root.root,
          root.state,
          root.files or 0,
          root.symbols or 0,
          (root.densePending or 0) > 0 and (', %d to embed'):format(root.densePending) or ''
        )
      )
    end
    local runs = vim.tbl_values(events.runs)
    table.sort(runs, function(a, b)
      return a.id < b.id
    end)
    for _, run in ipairs(runs) do
      local workflow = run.workflow ~= vim.NIL and run.workflow or nil
      table.insert(
        lines,
        ('run %s: %s%s%s%s · %s'):format(
          run.id,
          run.status,
          workflow and (' (' .. workflow .. ')') or '',
          run.stage and (' at ' .. run.stage) or '',
          run.changeset_id and (' → changeset ' .. run.changeset_id) or '',
          events.usage_text(run.usage)
        )
      )
    end
    review().list(false, function(list_err, found)
      if list_err then
        table.insert(lines, 'changesets: ' .. list_err)
      else
        table.insert(lines, ('%d pending changeset(s)'):format(#found))
        for _, cs in ipairs(found) do
          table.insert(lines, '  ' .. review().format_changeset(cs))
        end
      end
      vim.notify(table.concat(lines, '\n'), vim.log.levels.INFO, { title = 'agentic-lsp' })
      if done then
        done(lines)
      end
    end)
  end, c)
end

--- For statuslines: a running run's stage or the index state while it is not ready.
function M.statusline()
  return events.statusline()
end

return M
