--- :checkhealth agentic_lsp — Neovim version, server found and its version, the running client,
--- Ollama reachable (and the model pulled), index state of every workspace folder.
local M = {}

local DEFAULT_OLLAMA = 'http://127.0.0.1:11434'
local DEFAULT_MODEL = 'qwen2.5-coder:7b'

--- `key = "value"` of `[section]` (or `section.key = "value"`) in a TOML file; plain strings only,
--- which is all the health check needs.
function M.toml_string(path, section, key)
  local handle = io.open(path, 'r')
  if not handle then
    return nil
  end
  local current
  for line in handle:lines() do
    local header = line:match('^%s*%[%s*([%w_.-]+)%s*%]')
    if header then
      current = header
    else
      local k, v = line:match('^%s*([%w_.-]+)%s*=%s*["\']([^"\']*)["\']')
      if k and ((current == section and k == key) or (current == nil and k == section .. '.' .. key)) then
        handle:close()
        return v
      end
    end
  end
  handle:close()
  return nil
end

local function user_config_file()
  local override = vim.env.AGENTIC_LSP_CONFIG
  if override and override ~= '' then
    return override
  end
  local base = vim.env.XDG_CONFIG_HOME or (vim.uv.os_homedir() .. '/.config')
  return base .. '/agentic-lsp/config.toml'
end

--- A user-only setting (llm.*) as the server resolves it (initializationOptions > environment >
--- user file), with where it came from; nil when only the default applies. A repository's
--- .agentic-lsp.toml may not set these unless the user trusts it (`agentic-lsp trust`), so it is
--- not read here: :checkhealth must never contact a host a repository chose.
local function setting(section, key, _roots)
  local options = require('agentic_lsp.config').options.init_options or {}
  local value = vim.tbl_get(options, section, key)
  if value ~= nil then
    return value, 'setup()'
  end
  local env = vim.env[('AGENTIC_LSP_%s__%s'):format(section:upper(), key:upper())]
  if env and env ~= '' then
    return env, 'environment'
  end
  local file = user_config_file()
  local found = M.toml_string(file, section, key)
  if found then
    return found, vim.fn.fnamemodify(file, ':~')
  end
  return nil, nil
end

--- Version argv of the server command: its argv up to `serve`, plus `--version`.
function M.version_argv(cmd)
  local argv = {}
  for _, part in ipairs(cmd) do
    if part == 'serve' then
      break
    end
    table.insert(argv, part)
  end
  table.insert(argv, '--version')
  return argv
end

--- GET `url .. path` over plain HTTP/1.0 with a deadline; returns status, body or nil, error.
function M.http_get(url, path, timeout_ms)
  local host, port = url:match('^http://%[?([^%]/]+)%]?:(%d+)')
  if not host then
    host = url:match('^http://([^:/]+)')
    port = 80
  end
  if not host then
    return nil, 'not an http:// address: ' .. url
  end
  local infos = vim.uv.getaddrinfo(host, nil, { socktype = 'stream' })
  if not infos or not infos[1] then
    return nil, 'cannot resolve ' .. host
  end
  local tcp = vim.uv.new_tcp()
  local chunks, done, failure = {}, false, nil
  tcp:connect(infos[1].addr, tonumber(port), function(err)
    if err then
      failure, done = err, true
      return
    end
    tcp:write(('GET %s HTTP/1.0\r\nHost: %s\r\nAccept: application/json\r\n\r\n'):format(path, host))
    tcp:read_start(function(read_err, chunk)
      if read_err then
        failure, done = read_err, true
      elseif chunk then
        table.insert(chunks, chunk)
      else
        done = true
      end
    end)
  end)
  local finished = vim.wait(timeout_ms or 2000, function()
    return done
  end, 10)
  if not tcp:is_closing() then
    tcp:close()
  end
  if not finished then
    return nil, 'no answer within ' .. (timeout_ms or 2000) .. ' ms'
  end
  if failure then
    return nil, failure
  end
  local response = table.concat(chunks)
  local status = tonumber(response:match('^HTTP/%d%.%d (%d+)'))
  local body = response:match('\r\n\r\n(.*)$') or ''
  return status, body
end

local function check_neovim()
  vim.health.start('agentic-lsp: Neovim')
  local v = vim.version()
  local text = ('Neovim %d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.11') == 1 then
    vim.health.ok(text .. ': vim.lsp.config / vim.lsp.enable available')
  elseif vim.fn.has('nvim-0.10') == 1 then
    vim.health.warn(
      text .. ': no vim.lsp.config; the plugin starts the client with vim.lsp.start',
      { 'Neovim 0.11+ is recommended' }
    )
  else
    vim.health.error(text .. ' is too old', { 'the plugin needs Neovim 0.10 or newer' })
  end
end

local function check_server(clients)
  vim.health.start('agentic-lsp: server')
  local cmd = require('agentic_lsp.config').options.cmd
  local exe = vim.fn.exepath(cmd[1])
  if exe == '' then
    vim.health.error(('server not found: `%s` is not an executable'):format(cmd[1]), {
      'install it (make install in a checkout, or a tool install of its wheel: see its README)',
      'then `agentic-lsp setup neovim` points this plugin at it',
      "or point the plugin at it: require('agentic_lsp').setup({ cmd = { '/path/to/agentic-lsp', 'serve' } })",
    })
    return
  end
  vim.health.ok(('server found: %s (cmd: %s)'):format(exe, table.concat(cmd, ' ')))
  local info = clients[1] and clients[1].server_info
  if info and info.version then
    vim.health.ok(('version: %s %s (running)'):format(info.name or 'agentic-lsp', info.version))
  else
    local ok, result = pcall(function()
      return vim.system(M.version_argv(cmd), { text = true }):wait(15000)
    end)
    local out = ok and result and vim.trim((result.stdout or '') .. (result.stderr or '')) or ''
    if ok and result.code == 0 and out ~= '' then
      vim.health.ok('version: ' .. out)
    else
      vim.health.warn('could not read the server version: ' .. (ok and out or tostring(result)))
    end
  end
  if #clients == 0 then
    vim.health.warn('not running in this session', {
      'open a file inside a project (a folder with .git, .agentic-lsp.toml or .agentic-lsp/)',
    })
  end
  for _, c in ipairs(clients) do
    local folders = {}
    for _, f in ipairs(c.workspace_folders or {}) do
      table.insert(folders, vim.uri_to_fname(f.uri))
    end
    vim.health.ok(('running: client %d for %s'):format(c.id, table.concat(folders, ', ')))
  end
end

local function check_ollama(roots)
  vim.health.start('agentic-lsp: LLM')
  local provider, from = setting('llm', 'provider', roots)
  provider = provider or 'ollama'
  if provider ~= 'ollama' then
    vim.health.ok(('Ollama not used: llm.provider = %s (%s)'):format(provider, from or 'default'))
    return
  end
  local host = setting('llm', 'ollama_host', roots) or vim.env.OLLAMA_HOST or DEFAULT_OLLAMA
  if not host:match('^https?://') then
    host = 'http://' .. host
  end
  host = host:gsub('/$', '')
  local model = setting('llm', 'model', roots) or DEFAULT_MODEL
  local status, body = M.http_get(host, '/api/version', 2000)
  if status ~= 200 then
    vim.health.warn(('Ollama not reachable at %s (%s); workflows need it'):format(host, body or status), {
      'start it with `ollama serve`, or set llm.ollama_host (setup init_options) / OLLAMA_HOST',
    })
    return
  end
  local okv, version = pcall(vim.json.decode, body)
  vim.health.ok(('Ollama reachable at %s, version %s'):format(host, okv and version.version or '?'))
  local tstatus, tags = M.http_get(host, '/api/tags', 2000)
  local okt, decoded = pcall(vim.json.decode, tags or '')
  if tstatus ~= 200 or not okt then
    vim.health.warn('could not list the models of ' .. host)
    return
  end
  local names = {}
  for _, m in ipairs(decoded.models or {}) do
    local name = m.name or m.model or ''
    table.insert(names, name)
    if name == model or (not model:find(':') and name:match('^[^:]+') == model) then
      vim.health.ok(('model %s present'):format(model))
      return
    end
  end
  vim.health.warn(
    ('model %s is not pulled'):format(model),
    { ('ollama pull %s, or set llm.model to one of: %s'):format(model, table.concat(names, ', ')) }
  )
end

local function check_index(clients)
  vim.health.start('agentic-lsp: index')
  if #clients == 0 then
    vim.health.info('no running server to ask')
    return
  end
  local client = require('agentic_lsp.client')
  for _, c in ipairs(clients) do
    local result, err = client.execute_sync('indexStatus', {}, 5000, c)
    if not result then
      vim.health.error('index status unavailable: ' .. tostring(err))
    else
      for _, root in ipairs(result.roots or {}) do
        local message = (root.message and root.message ~= vim.NIL and root.message ~= '') and (' — ' .. root.message)
          or ''
        local text = ('index of %s: %s, %d files, %d symbols, %d waiting for embeddings (%s store)%s'):format(
          root.root,
          root.state,
          root.files or 0,
          root.symbols or 0,
          root.densePending or 0,
          root.store or '?',
          message
        )
        if root.state == 'ready' then
          vim.health.ok(text)
        elseif root.state == 'failed' or root.state == 'error' then
          vim.health.error(text, { 'see the server log (:lua vim.cmd.edit(vim.lsp.log.get_filename()))' })
        else
          vim.health.warn(text)
        end
      end
    end
  end
end

function M.check()
  local clients = require('agentic_lsp.client').all()
  local roots = {}
  for _, c in ipairs(clients) do
    for _, folder in ipairs(c.workspace_folders or {}) do
      table.insert(roots, vim.uri_to_fname(folder.uri))
    end
  end
  if #roots == 0 then
    table.insert(roots, require('agentic_lsp.config').find_root(vim.fn.getcwd()))
  end
  check_neovim()
  check_server(clients)
  check_ollama(roots)
  check_index(clients)
end

return M
