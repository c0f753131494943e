-- A headless Neovim that hosts agentic-lsp for benchmarks/editor_host.py: the plugin from
-- editors/neovim starts the server on $AGENTIC_BENCH_ROOT; jedi-language-server
-- ($AGENTIC_BENCH_JEDI) attaches to every Python buffer as a second client, so the plugin lends
-- it to the engine (agentic/editorNavigation, answered `editor:neovim:jedi`). The files named
-- in $AGENTIC_BENCH_FILES (JSON list, relative) are loaded as buffers: Neovim lends only loaded
-- buffers' clients. Progress and readiness go to $AGENTIC_BENCH_STATUS (JSON); creating
-- $AGENTIC_BENCH_QUIT makes Neovim stop its clients and exit. Nothing else: the questions are
-- asked through the server's MCP endpoint by the benchmark.
vim.opt.runtimepath:prepend(vim.env.AGENTIC_BENCH_PLUGIN)
vim.opt.swapfile = false
vim.o.shadafile = 'NONE'
vim.o.hidden = true

local root = vim.env.AGENTIC_BENCH_ROOT
local status = { phase = 'starting', loaded = 0, notes = {} }

local function write_status()
  local f = assert(io.open(vim.env.AGENTIC_BENCH_STATUS .. '.tmp', 'w'))
  f:write(vim.json.encode(status))
  f:close()
  os.rename(vim.env.AGENTIC_BENCH_STATUS .. '.tmp', vim.env.AGENTIC_BENCH_STATUS)
end

local function attached(name, buf)
  local c = vim.lsp.get_clients({ name = name, bufnr = buf })[1]
  return c ~= nil and c.initialized
end

local function start()
  vim.notify = function(message)
    table.insert(status.notes, message)
  end
  vim.api.nvim_create_autocmd('FileType', {
    pattern = 'python',
    callback = function(args)
      vim.lsp.start({ name = 'jedi', cmd = { vim.env.AGENTIC_BENCH_JEDI }, root_dir = root }, { bufnr = args.buf })
    end,
  })
  require('agentic_lsp').setup({
    cmd = vim.json.decode(vim.env.AGENTIC_BENCH_SERVER),
    init_options = vim.json.decode(vim.env.AGENTIC_BENCH_OPTIONS),
    -- how long Neovim waits for jedi's answer (default 5000): jedi's cold answers are measured,
    -- not cut off (the server's navigation.editor_timeout_s is raised alike)
    timeout_ms = tonumber(vim.env.AGENTIC_BENCH_TIMEOUT_MS),
  })
  local bufs = {}
  for _, rel in ipairs(vim.json.decode(vim.env.AGENTIC_BENCH_FILES)) do
    vim.cmd.edit(vim.fn.fnameescape(root .. '/' .. rel))
    table.insert(bufs, vim.api.nvim_get_current_buf())
  end
  status.phase = 'attaching'
  write_status()
  local events = require('agentic_lsp.events')
  local timer = assert(vim.uv.new_timer())
  timer:start(100, 200, vim.schedule_wrap(function()
    if vim.uv.fs_stat(vim.env.AGENTIC_BENCH_QUIT) then
      timer:stop()
      vim.cmd('qa!')
      return
    end
    local n = 0
    for _, buf in ipairs(bufs) do
      if attached('jedi', buf) and attached('agentic_lsp', buf) then
        n = n + 1
      end
    end
    status.loaded = n
    status.buffers = #bufs
    local index = events.index[root] or events.index[vim.uv.fs_realpath(root)] or {}
    status.index_state = index.state
    status.index_phase = index.phase
    status.index_files = index.files
    if n == #bufs and index.state == 'ready' then
      status.phase = 'ready'
    end
    write_status()
  end))
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.schedule(function()
      local ok, err = pcall(start)
      if not ok then
        status.phase = 'failed'
        status.error = tostring(err)
        write_status()
      end
    end)
  end,
})
