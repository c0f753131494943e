-- A small harness for scenarios run in a real headless Neovim against the real server.
--
-- Steps wait on conditions with deadlines (never fixed sleeps); the outcome (ok, the failing
-- step and its traceback, values the pytest side checks, notifications) is written as JSON to
-- $AGENTIC_NVIM_RESULT, then Neovim stops the clients and exits (status 1 on failure).
local H = { values = {}, notes = {}, steps = {}, progress = {} }

H.TIMEOUT = tonumber(vim.env.AGENTIC_NVIM_TIMEOUT_MS or '') or 90000

--- Wait until `condition()` is truthy; fail naming `what` after `timeout` ms.
function H.wait(what, condition, timeout)
  local value
  local ok = vim.wait(timeout or H.TIMEOUT, function()
    value = condition()
    return value
  end, 20)
  if not ok then
    error(('timed out after %d ms waiting for %s'):format(timeout or H.TIMEOUT, what), 2)
  end
  return value
end

function H.eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(('%s:\n  expected %s\n  got      %s'):format(what, vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function H.truthy(value, what)
  if not value then
    error(what, 2)
  end
  return value
end

function H.contains(haystack, needle, what)
  if type(haystack) ~= 'string' or not haystack:find(needle, 1, true) then
    error(('%s: %s not found in:\n%s'):format(what, vim.inspect(needle), tostring(haystack)), 2)
  end
end

--- Record notifications and $/progress (LspProgress) instead of showing them.
function H.capture()
  vim.notify = function(message, level)
    table.insert(H.notes, { message = message, level = level or vim.log.levels.INFO })
  end
  vim.api.nvim_create_autocmd('LspProgress', {
    callback = function(args)
      local value = args.data.params.value
      table.insert(H.progress, { kind = value.kind, title = value.title, message = value.message })
    end,
  })
end

--- The first captured notification containing `text` (nil when none yet).
function H.note(text)
  for _, note in ipairs(H.notes) do
    if note.message:find(text, 1, true) then
      return note
    end
  end
  return nil
end

function H.read(path)
  local handle = assert(io.open(path, 'rb'))
  local text = handle:read('*a')
  handle:close()
  return text
end

function H.lines(text)
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

function H.buffer_lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- Run `fn(name)` as a named step, timing it.
function H.step(name, fn)
  local started = vim.uv.hrtime()
  H.current = name
  fn()
  table.insert(H.steps, { name = name, seconds = (vim.uv.hrtime() - started) / 1e9 })
end

local function write_result(result)
  local path = vim.env.AGENTIC_NVIM_RESULT
  if path then
    local handle = assert(io.open(path, 'w'))
    handle:write(vim.json.encode(result))
    handle:close()
  end
end

local function stop_clients()
  local clients = vim.lsp.get_clients()
  for _, c in ipairs(clients) do
    c:stop()
  end
  vim.wait(10000, function()
    for _, c in ipairs(clients) do
      if not c:is_stopped() then
        return false
      end
    end
    return true
  end, 20)
end

--- Run the scenario `fn`, report, and exit Neovim.
function H.run(fn)
  local ok, err = xpcall(fn, debug.traceback)
  local result = { ok = ok, step = H.current, steps = H.steps, values = H.values, notes = H.notes }
  if not ok then
    result.error = err
    io.stderr:write(('scenario failed in step %s: %s\n'):format(tostring(H.current), err))
  end
  write_result(result)
  stop_clients()
  vim.cmd(ok and 'qall!' or 'cquit! 1')
end

return H
